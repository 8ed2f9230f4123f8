"""Constituency trees: the nested :class:`Tree` and the compact :class:`TreeArrays`.

Notation
--------
* ``Tree(label, children)``: ``label`` is a ``str``; ``children`` is a list whose items are
  ``Tree`` objects or plain ``str`` words (the leaves).  A *preterminal* is a ``Tree`` whose only
  child is a ``str`` (``Tree("NN", ["dog"])``).  A root written as ``( (S ...) )`` has label ``""``.
* Bracket strings are PTB style, one line: ``(TOP (S (NP (DT The) (NN dog)) (VP (VBZ barks))))``.
  Tokens are ``(``, ``)`` and maximal runs of non-space, non-bracket characters; the token after
  an opening bracket is the node label unless it is another bracket (then the label is ``""``).
* Positions are word indices, spans are end exclusive: ``(label, start, end)``.
* ``height``: a word has height 0, a preterminal 2 (NLTK convention), a node 1 + its tallest child.

Every traversal is iterative, so trees of any depth (long right-branching binarised trees)
are handled without touching Python's recursion limit.

``TreeArrays`` stores a tree as preorder arrays for the kernels: ``label`` (int32 symbol id),
``start`` / ``end`` (int32, end exclusive), ``parent`` (int32, -1 for the root), ``n_children``
(int32, number of *node* children: 0 for a preterminal, whose word is ``words[start]``) and
``words`` (list of str).
"""
from __future__ import annotations

import re
import sys
from collections.abc import Mapping

import numpy as np

from ..errors import FormatError

__all__ = ["Tree", "TreeArrays", "tokenize_brackets", "as_tree"]

_TOKEN_RE = re.compile(r"\(|\)|[^\s()]+")
_tokenize = _TOKEN_RE.findall


def tokenize_brackets(text: str) -> list[str]:
    """Split bracket text into tokens: ``(``, ``)`` and runs of non-space, non-bracket characters."""
    return _tokenize(text)


_CLOSE = object()  # marker used by the iterative traversals


_BRACKETS = str.maketrans({"(": "-LRB-", ")": "-RRB-"})


def escape_brackets(token: str) -> str:
    """``token`` with ``(`` / ``)`` written as the PTB's ``-LRB-`` / ``-RRB-`` (unchanged when it
    has none): what bracketed output needs so that it reads back as the same tree."""
    if "(" in token or ")" in token:
        return token.translate(_BRACKETS)
    return token


_UNBRACKETS = (("-LRB-", "("), ("-RRB-", ")"))


def _unescape_brackets(token: str) -> str:
    if "-LRB-" in token or "-RRB-" in token:
        for a, b in _UNBRACKETS:
            token = token.replace(a, b)
    return token


def as_tree(item):
    """``item`` as a :class:`Tree` when it is an ``nltk.Tree`` (converted with
    :meth:`Tree.from_nltk`), else ``item`` itself (the caller checks its type).  NLTK is never
    imported here: an object can only be an ``nltk.Tree`` once NLTK has been imported."""
    if type(item) is Tree:
        return item
    nltk_tree = sys.modules.get("nltk.tree")
    if nltk_tree is not None and isinstance(item, getattr(nltk_tree, "Tree", ())):
        return Tree.from_nltk(item)
    return item


class Tree:
    """A constituency tree node: a ``label`` and a list of ``children`` (``Tree`` or ``str`` words)."""

    __slots__ = ("label", "children")

    def __init__(self, label: str, children=None):
        self.label = label
        if children is None:
            children = []
        elif type(children) is not list:
            children = list(children)
        self.children = children

    # ------------------------------------------------------------------ construction
    @classmethod
    def fromstring(cls, s: str) -> "Tree":
        """Parse one tree from a PTB bracket string (may span several lines).

        Accepts ``(TOP (S ...))`` and the raw treebank form ``( (S ...) )`` (root label ``""``).
        Raises :class:`~fastspectral.errors.FormatError` (a ``ValueError``) naming the line when
        the string is not exactly one well-formed tree.
        """
        parser = BracketParser()
        trees = []
        for lineno, line in enumerate(s.split("\n"), 1):
            trees.extend(parser.feed(line, lineno))
        parser.finish()
        if len(trees) != 1:
            raise FormatError(f"expected exactly one tree, found {len(trees)}", None, 1)
        return trees[0]

    # ------------------------------------------------------------------ predicates / access
    def is_preterminal(self) -> bool:
        """True when this node's only child is a word (``str``)."""
        ch = self.children
        return len(ch) == 1 and type(ch[0]) is str

    def __getitem__(self, i):
        return self.children[i]

    # ------------------------------------------------------------------ traversals
    def leaves(self) -> list[str]:
        """The words, left to right."""
        out = []
        stack = [self]
        pop, push = stack.pop, stack.extend
        while stack:
            x = pop()
            if type(x) is str:
                out.append(x)
            else:
                ch = x.children
                if len(ch) == 1 and type(ch[0]) is str:
                    out.append(ch[0])
                else:
                    push(reversed(ch))
        return out

    def pos(self) -> list[tuple[str, str]]:
        """``[(word, tag), ...]`` for the preterminals, left to right."""
        out = []
        stack = [self]
        pop, push = stack.pop, stack.extend
        while stack:
            x = pop()
            if type(x) is str:
                continue
            ch = x.children
            if len(ch) == 1 and type(ch[0]) is str:
                out.append((ch[0], x.label))
            else:
                push(reversed(ch))
        return out

    def spans(self) -> list[tuple[str, int, int]]:
        """``(label, start, end)`` for every non-leaf node (preterminals included), in preorder,
        end exclusive."""
        res = []
        pos = 0
        stack = [self]
        pop, push = stack.pop, stack.append
        while stack:
            x = pop()
            if type(x) is int:  # close marker: index into res
                r = res[x]
                res[x] = (r[0], r[1], pos)
                continue
            if type(x) is str:
                pos += 1
                continue
            ch = x.children
            if len(ch) == 1 and type(ch[0]) is str:
                res.append((x.label, pos, pos + 1))
                pos += 1
                continue
            push(len(res))
            res.append((x.label, pos, -1))
            stack.extend(reversed(ch))
        return res

    @property
    def height(self) -> int:
        """Longest path to a word counted in nodes, the word included (preterminal: 2)."""
        best = 0
        stack = [(self, 1)]
        while stack:
            x, d = stack.pop()
            if type(x) is str:
                if d > best:
                    best = d
                continue
            if not x.children and d > best:
                best = d
            d += 1
            stack.extend((c, d) for c in x.children)
        return best

    def subtrees(self):
        """Iterate over every ``Tree`` node in preorder (the node itself first)."""
        stack = [self]
        while stack:
            x = stack.pop()
            yield x
            stack.extend(c for c in reversed(x.children) if type(c) is not str)

    def copy(self) -> "Tree":
        """Deep copy (labels and words are shared immutable strings)."""
        new = Tree(self.label, [])
        stack = [(self, new)]
        while stack:
            src, dst = stack.pop()
            out = dst.children
            for c in src.children:
                if type(c) is str:
                    out.append(c)
                else:
                    n = Tree(c.label, [])
                    out.append(n)
                    stack.append((c, n))
        return new

    # ------------------------------------------------------------------ comparison / printing
    def __eq__(self, other):
        if not isinstance(other, Tree):
            return NotImplemented
        stack = [(self, other)]
        while stack:
            a, b = stack.pop()
            if a.label != b.label:
                return False
            ca, cb = a.children, b.children
            if len(ca) != len(cb):
                return False
            for x, y in zip(ca, cb):
                tx = type(x) is str
                if tx != (type(y) is str):
                    return False
                if tx:
                    if x != y:
                        return False
                else:
                    stack.append((x, y))
        return True

    __hash__ = None  # mutable

    def to_string(self) -> str:
        """One-line PTB bracket string, e.g. ``(TOP (S (NP (DT The) (NN dog)) (VP (VBZ barks))))``.

        Brackets inside words and labels are written as the Penn Treebank writes them: ``(`` as
        ``-LRB-`` and ``)`` as ``-RRB-`` (``(NN ()`` could not be read back), see
        :func:`escape_brackets`."""
        esc = escape_brackets
        out = ["(" + esc(self.label)]
        stack = [_CLOSE]
        stack.extend(reversed(self.children))
        pop, push, app = stack.pop, stack.extend, out.append
        while stack:
            x = pop()
            if x is _CLOSE:
                app(")")
            elif type(x) is str:
                app(" " + esc(x))
            else:
                ch = x.children
                if len(ch) == 1 and type(ch[0]) is str:
                    app(" (" + esc(x.label) + " " + esc(ch[0]) + ")")
                else:
                    app(" (" + esc(x.label))
                    stack.append(_CLOSE)
                    push(reversed(ch))
        return "".join(out)

    __str__ = to_string

    def __repr__(self):
        s = self.to_string()
        if len(s) > 200:
            s = s[:197] + "..."
        return f"Tree.fromstring({s!r})"

    # ------------------------------------------------------------------ NLTK
    def to_nltk(self, escape: bool = False):
        """This tree as an ``nltk.Tree`` (NLTK is imported here, and only here).

        Labels and words are copied verbatim, so ``Tree.from_nltk(t.to_nltk()) == t``.  With
        ``escape=True``, ``(`` / ``)`` inside labels and words are written ``-LRB-`` / ``-RRB-``
        (:func:`escape_brackets`), so that NLTK's bracketed output
        (``pformat(margin=sys.maxsize)``) equals :meth:`to_string` and reads back;
        ``Tree.from_nltk(t.to_nltk(escape=True), unescape=True) == t`` for a tree whose strings
        hold brackets but no ``-LRB-`` / ``-RRB-`` of their own."""
        from nltk import Tree as NLTKTree

        esc = escape_brackets if escape else (lambda x: x)
        root = NLTKTree(esc(self.label), [])
        stack = [(self, root)]
        while stack:
            src, dst = stack.pop()
            for c in src.children:
                if type(c) is str:
                    dst.append(esc(c))
                else:
                    n = NLTKTree(esc(c.label), [])
                    dst.append(n)
                    stack.append((c, n))
        return root

    @classmethod
    def from_nltk(cls, tree, unescape: bool = False) -> "Tree":
        """A :class:`Tree` from an ``nltk.Tree`` (labels and words copied verbatim; with
        ``unescape=True``, ``-LRB-`` / ``-RRB-`` become ``(`` / ``)``).

        Raises ``TypeError`` when a label or a leaf is not a ``str`` (NLTK allows any object:
        chunk trees hold ``(word, tag)`` leaves)."""
        un = _unescape_brackets if unescape else (lambda x: x)

        def label_of(t):
            lab = t.label()
            if not isinstance(lab, str):
                raise TypeError(f"nltk.Tree label {lab!r} is a {type(lab).__name__}, "
                                "expected str")
            return un(lab)

        root = cls(label_of(tree), [])
        stack = [(tree, root)]
        while stack:
            src, dst = stack.pop()
            out = dst.children
            for c in src:
                if isinstance(c, str):
                    out.append(un(c))
                elif hasattr(c, "label") and callable(c.label):
                    n = cls(label_of(c), [])
                    out.append(n)
                    stack.append((c, n))
                else:
                    raise TypeError(f"nltk.Tree leaf {c!r} is a {type(c).__name__}, "
                                    "expected str")
        return root

    # ------------------------------------------------------------------ arrays
    def to_arrays(self, symbols) -> "TreeArrays":
        """Compact preorder arrays; ``symbols[label]`` gives the int id of each label (dict or any
        object with ``__getitem__``, e.g. a SymbolTable)."""
        return TreeArrays.from_tree(self, symbols)


class BracketParser:
    """Incremental PTB bracket parser working across lines (used by ``Tree.fromstring`` and ``read_ptb``).

    ``feed(line, lineno)`` returns the list of trees completed on that line; ``finish()`` raises a
    ``FormatError`` if a tree is still open.  ``path`` is only used in error messages.
    Rules: a node needs children (``()`` and ``(X)`` are errors); a node holds either one word or
    subtrees, never both; only a root may lack a label; no words outside brackets.
    """

    __slots__ = ("stack", "expect_label", "start_line", "path")

    def __init__(self, path=None):
        self.stack = []
        self.expect_label = False
        self.start_line = 0
        self.path = path

    def _err(self, msg, line):
        raise FormatError(msg, self.path, line)

    def feed(self, line: str, lineno: int) -> list:
        """Consume one line of text; return the trees completed on it."""
        done = []
        stack = self.stack
        expect_label = self.expect_label
        for tok in _tokenize(line):
            if tok == "(":
                if stack:
                    top = stack[-1]
                    ch = top.children
                    if ch and type(ch[0]) is str:
                        self._err(f"node ({top.label} {ch[0]} ...) mixes a word with subtrees", lineno)
                else:
                    self.start_line = lineno
                node = Tree.__new__(Tree)
                node.label = ""
                node.children = []
                stack.append(node)
                expect_label = True
            elif tok == ")":
                if not stack:
                    self._err("unbalanced ')': closing bracket with no open tree", lineno)
                node = stack.pop()
                expect_label = False
                if not node.children:
                    if node.label:
                        self._err(f"node ({node.label}) has no children", lineno)
                    self._err("empty node '()'", lineno)
                if stack:
                    if not node.label:
                        self._err("node without a label inside a tree (only a root may be unlabelled)",
                                  lineno)
                    stack[-1].children.append(node)
                else:
                    done.append(node)
            else:
                if expect_label:
                    stack[-1].label = tok
                    expect_label = False
                elif not stack:
                    self._err(f"text outside brackets: {tok!r}", lineno)
                else:
                    top = stack[-1]
                    if top.children:
                        self._err(f"node {top.label!r} has a word {tok!r} after other children "
                                  "(a node holds one word or subtrees)", lineno)
                    top.children.append(tok)
        self.expect_label = expect_label
        return done

    def finish(self):
        """Raise ``FormatError`` if input ended inside a tree."""
        if self.stack:
            self._err(f"unbalanced brackets: tree starting on line {self.start_line} is not closed "
                      f"({len(self.stack)} open at end of input)", self.start_line)


def _id_to_label_function(symbols):
    """Turn the ``symbols`` argument of :meth:`TreeArrays.to_tree` into ``id -> label``."""
    if isinstance(symbols, Mapping):
        if symbols and isinstance(next(iter(symbols)), str):  # label -> id: invert
            inv = {int(i): s for s, i in symbols.items()}
            return inv.__getitem__
        return symbols.__getitem__
    for attr in ("labels", "symbols", "names", "id_to_symbol", "id_to_label"):
        seq = getattr(symbols, attr, None)
        if seq is not None and not callable(seq):
            return seq.__getitem__
    for attr in ("label", "symbol", "name", "id_to_symbol", "id_to_label"):
        fn = getattr(symbols, attr, None)
        if callable(fn):
            return fn
    return symbols.__getitem__


class TreeArrays:
    """A tree as preorder arrays (see the module docstring for the layout).

    Attributes: ``label``, ``start``, ``end``, ``parent``, ``n_children`` (``np.int32`` arrays of
    length ``n_nodes``) and ``words`` (list of str, ``len == end[0]``).  Words are not nodes: a node
    with ``n_children == 0`` is a preterminal covering ``words[start]``.
    """

    __slots__ = ("label", "start", "end", "parent", "n_children", "words")

    def __init__(self, label, start, end, parent, n_children, words):
        self.label = np.asarray(label, dtype=np.int32)
        self.start = np.asarray(start, dtype=np.int32)
        self.end = np.asarray(end, dtype=np.int32)
        self.parent = np.asarray(parent, dtype=np.int32)
        self.n_children = np.asarray(n_children, dtype=np.int32)
        self.words = list(words)

    def __len__(self):
        return len(self.label)

    @property
    def n_nodes(self) -> int:
        """Number of nodes (preterminals included, words excluded)."""
        return len(self.label)

    @classmethod
    def from_tree(cls, tree: Tree, symbols) -> "TreeArrays":
        """Build the arrays of ``tree``; ``symbols[label] -> int`` maps labels to ids.

        Raises ``ValueError`` for a node with no children or one mixing words with subtrees,
        and ``KeyError`` (from ``symbols``) for an unknown label."""
        labels, starts, ends, parents, nch, words = [], [], [], [], [], []
        pos = 0
        stack = [(tree, -1)]
        pop = stack.pop
        while stack:
            x, par = pop()
            if type(x) is int:  # close marker
                ends[x] = pos
                continue
            i = len(labels)
            labels.append(symbols[x.label])
            starts.append(pos)
            parents.append(par)
            ch = x.children
            if len(ch) == 1 and type(ch[0]) is str:
                words.append(ch[0])
                pos += 1
                ends.append(pos)
                nch.append(0)
                continue
            if not ch:
                raise ValueError(f"node {x.label!r} has no children")
            ends.append(-1)
            nch.append(len(ch))
            stack.append((i, None))
            for c in reversed(ch):
                if type(c) is str:
                    raise ValueError(f"node {x.label!r} mixes words and subtrees")
                stack.append((c, i))
        return cls(labels, starts, ends, parents, nch, words)

    def to_tree(self, symbols, words=None) -> Tree:
        """Inverse of :meth:`from_tree`.

        ``symbols`` maps ids back to labels: a sequence indexed by id, a dict ``id -> label`` or
        ``label -> id`` (inverted), or an object with a ``labels``/``symbols``/``names`` sequence or a
        ``label(id)``/``symbol(id)`` method.  ``words`` overrides ``self.words`` when given.
        """
        lab = _id_to_label_function(symbols)
        if words is None:
            words = self.words
        label = self.label.tolist()
        start = self.start.tolist()
        parent = self.parent.tolist()
        nch = self.n_children.tolist()
        nodes = []
        for i in range(len(label)):
            if nch[i] == 0:
                node = Tree(lab(label[i]), [words[start[i]]])
            else:
                node = Tree(lab(label[i]), [])
            nodes.append(node)
            p = parent[i]
            if p >= 0:
                nodes[p].children.append(node)
        if not nodes:
            raise ValueError("empty TreeArrays")
        return nodes[0]

    def __repr__(self):
        return f"TreeArrays(n_nodes={len(self.label)}, n_words={len(self.words)})"
