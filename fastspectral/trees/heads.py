"""Collins (1999) head rules and constituency -> dependency conversion.

Notation
--------
``HEAD_RULES[label] = (direction, priority)``: ``direction`` is ``"left"`` (scan the children left
to right) or ``"right"`` (right to left).  For each category of ``priority`` in turn, the first
child found with that label in the scan direction is the head; when no category matches, the
first child in the scan direction is the head (leftmost for ``"left"``, rightmost for ``"right"``).
``NP`` (and any label without a rule that starts with ``NP``) uses Collins' special rule:

1. the last child if it is ``POS``;
2. else the first of ``NN NNP NNPS NNS NX POS JJR`` scanning right to left;
3. else the first ``NP`` scanning left to right;
4. else the first of ``$ ADJP PRN``, then ``CD``, then ``JJ JJS RB QP``, each scanning right to left;
5. else the last child.

Labels are normalised before lookup: function tags and indices stripped (``NP-SBJ-1`` -> ``NP``),
binarisation annotations stripped (``NP^S`` -> ``NP``), and for a collapsed unary label ``S+VP``
the parent uses its bottom category (``VP``) while a child is seen as its top category (``S``).
Labels without a rule (``TOP``, ``ROOT``, ``""``, unknown) take their leftmost child.

``tree_to_dependencies(t)`` returns ``(words, tags, heads)``: ``heads[i]`` is the 1-based index of
the head of word ``i+1``, 0 for the root word; the result is a single-rooted projective tree.
"""
from __future__ import annotations

from .transforms import base_label, strip_function_tags
from .tree import Tree

__all__ = ["HEAD_RULES", "find_head", "tree_to_dependencies"]

HEAD_RULES: dict[str, tuple[str, tuple[str, ...]]] = {
    "ADJP": ("left", ("NNS", "QP", "NN", "$", "ADVP", "JJ", "VBN", "VBG", "ADJP", "JJR", "NP", "JJS",
                      "DT", "FW", "RBR", "RBS", "SBAR", "RB")),
    "ADVP": ("right", ("RB", "RBR", "RBS", "FW", "ADVP", "TO", "CD", "JJR", "JJ", "IN", "NP", "JJS",
                       "NN")),
    "CONJP": ("right", ("CC", "RB", "IN")),
    "FRAG": ("right", ()),
    "INTJ": ("left", ()),
    "LST": ("right", ("LS", ":")),
    "NAC": ("left", ("NN", "NNS", "NNP", "NNPS", "NP", "NAC", "EX", "$", "CD", "QP", "PRP", "VBG",
                     "JJ", "JJS", "JJR", "ADJP", "FW")),
    "NX": ("left", ()),
    "PP": ("right", ("IN", "TO", "VBG", "VBN", "RP", "FW")),
    "PRN": ("left", ()),
    "PRT": ("right", ("RP",)),
    "QP": ("left", ("$", "IN", "NNS", "NN", "JJ", "RB", "DT", "CD", "NCD", "QP", "JJR", "JJS")),
    "RRC": ("right", ("VP", "NP", "ADVP", "ADJP", "PP")),
    "S": ("left", ("TO", "IN", "VP", "S", "SBAR", "ADJP", "UCP", "NP")),
    "SBAR": ("left", ("WHNP", "WHPP", "WHADVP", "WHADJP", "IN", "DT", "S", "SQ", "SINV", "SBAR",
                      "FRAG")),
    "SBARQ": ("left", ("SQ", "S", "SINV", "SBARQ", "FRAG")),
    "SINV": ("left", ("VBZ", "VBD", "VBP", "VB", "MD", "VP", "S", "SINV", "ADJP", "NP")),
    "SQ": ("left", ("VBZ", "VBD", "VBP", "VB", "MD", "VP", "SQ")),
    "UCP": ("right", ()),
    "VP": ("left", ("TO", "VBD", "VBN", "MD", "VBZ", "VB", "VBG", "VBP", "VP", "ADJP", "NN", "NNS",
                    "NP")),
    "WHADJP": ("left", ("CC", "WRB", "JJ", "ADJP")),
    "WHADVP": ("right", ("CC", "WRB")),
    "WHNP": ("left", ("WDT", "WP", "WP$", "WHADJP", "WHPP", "WHNP")),
    "WHPP": ("right", ("IN", "TO", "FW")),
    "X": ("right", ()),
}

_NP_NOUNS = frozenset(("NN", "NNP", "NNPS", "NNS", "NX", "POS", "JJR"))
_NP_STEPS = (frozenset(("$", "ADJP", "PRN")), frozenset(("CD",)), frozenset(("JJ", "JJS", "RB", "QP")))

_norm_cache: dict = {}


def _norm(label: str, bottom: bool) -> str:
    key = (label, bottom)
    r = _norm_cache.get(key)
    if r is None:
        r = base_label(label)
        if r[:1] == "@":
            r = r[1:]
        if "+" in r:
            parts = r.split("+")
            r = parts[-1] if bottom else parts[0]
        r = strip_function_tags(r)
        _norm_cache[key] = r
    return r


def _np_head(kids: list[str]) -> int:
    n = len(kids)
    if kids[-1] == "POS":
        return n - 1
    for i in range(n - 1, -1, -1):
        if kids[i] in _NP_NOUNS:
            return i
    for i in range(n):
        if kids[i] == "NP":
            return i
    for cats in _NP_STEPS:
        for i in range(n - 1, -1, -1):
            if kids[i] in cats:
                return i
    return n - 1


def find_head(label: str, child_labels) -> int:
    """Index (0-based) of the head child of a node ``label`` with children ``child_labels``
    (Collins 1999 rules, see module docstring).  Raises ``ValueError`` for no children."""
    n = len(child_labels)
    if n == 0:
        raise ValueError(f"node {label!r} has no children")
    if n == 1:
        return 0
    lab = _norm(label, True)
    kids = [_norm(c, False) for c in child_labels]
    rule = HEAD_RULES.get(lab)
    if rule is None:
        if lab == "NP" or lab.startswith("NP"):
            return _np_head(kids)
        return 0
    direction, priority = rule
    if direction == "left":
        for cat in priority:
            for i in range(n):
                if kids[i] == cat:
                    return i
        return 0
    for cat in priority:
        for i in range(n - 1, -1, -1):
            if kids[i] == cat:
                return i
    return n - 1


def tree_to_dependencies(t: Tree) -> tuple[list[str], list[str], list[int]]:
    """Convert a (cleaned) constituency tree to an unlabelled dependency tree with Collins heads.

    Returns ``(words, tags, heads)``; ``heads`` are 1-based, 0 marks the root.  The root node may
    be ``TOP``.  Raises ``ValueError`` for a node without children or mixing words and subtrees."""
    words: list[str] = []
    tags: list[str] = []
    heads: list[int] = []
    values: list[int] = []  # lexical head (0-based word index) of finished nodes, postorder
    stack = [t]
    pop, push = stack.pop, stack.append
    while stack:
        x = pop()
        if type(x) is tuple:
            node = x[0]
            ch = node.children
            k = len(ch)
            hs = values[-k:]
            del values[-k:]
            hi = find_head(node.label, [c.label for c in ch])
            h = hs[hi]
            for j in range(k):
                if j != hi:
                    heads[hs[j]] = h + 1
            values.append(h)
            continue
        ch = x.children
        if len(ch) == 1 and type(ch[0]) is str:
            values.append(len(words))
            words.append(ch[0])
            tags.append(x.label)
            heads.append(0)
            continue
        if not ch:
            raise ValueError(f"node {x.label!r} has no children")
        for c in ch:
            if type(c) is str:
                raise ValueError(f"node {x.label!r} mixes words and subtrees")
        push((x,))
        stack.extend(reversed(ch))
    return words, tags, heads
