"""Treebank transforms: cleaning, unary collapsing and binarisation with markovisation.

Pipeline: ``prepare(t, v, h) = binarize(collapse_unary(clean(t)), v, h)`` and its inverse
``unprepare(t) = restore_unary(debinarize(t))``.  Every function returns a new tree and leaves its
argument untouched; all traversals are iterative (no recursion limit).

Notation
--------
Reserved characters (never found in PTB labels once cleaned; ``binarize`` rejects labels using
them): ``^`` (parent annotation), ``|`` (start of the sibling context of an intermediate symbol),
a leading ``@`` (intermediate symbol).  ``+`` joins a collapsed unary chain and ``_`` separates the
sibling labels inside a context.

* **clean**: function tags and indices are stripped at the first ``-`` or ``=`` after the first
  character (``NP-SBJ-1``, ``NP=2``, ``PP-LOC-CLR``, ``S-TPC-1`` -> ``NP``, ``NP``, ``PP``, ``S``);
  labels that start and end with ``-`` (``-LRB-``, ``-RRB-``, ``-NONE-``, ``-LCB-``...) are kept
  untouched; an ambiguous label ``A|B`` (WSJ has ``ADVP|PRT``) keeps its first alternative ``A``.
  ``-NONE-`` preterminals are removed, then every constituent left without children (repeatedly).
  The root becomes ``TOP``: an unlabelled (``""``), ``ROOT`` or ``TOP`` root is relabelled ``TOP``;
  any other root gets a new ``TOP`` node above it.
* **collapse_unary**: a unary chain of phrasal nodes becomes one node ``A+B+C`` (top to bottom);
  the chain stops above a preterminal, so ``(NP (NN dog))`` stays and ``(S (VP (VB Go)))`` becomes
  ``(S+VP (VB Go))``.  A root labelled ``TOP`` is never merged.
* **binarize(v, h)**, right-factored.  A phrasal node ``X`` whose parent is ``P`` and grandparent
  ``G`` is written ``X`` (v=1), ``X^P`` (v=2), ``X^P^G`` (v=3) ... ; ``P``/``G`` are the unannotated
  (cleaned, collapsed) labels, e.g. ``NP^S+VP``.  Preterminals keep their tag unless
  ``tag_parent=True`` (then ``NN^NP`` ...).  The root is never annotated; its children get ``^TOP``.
  A node ``Xa`` (``X`` with its annotation) with children ``C1 .. Cn``, n > 2, becomes::

      Xa -> C1 @Xa|c1                     (h = 1: context = the last sibling generated)
      @Xa|c1 -> C2 @Xa|c2
      ...
      @Xa|c(n-2) -> C(n-1) Cn

  where ``ci`` is the unannotated label of the i-th child and the context lists the last ``h``
  siblings already generated, left to right, joined by ``_`` (``@NP^S|DT_JJ`` for h=2; h=None keeps
  them all).  With h=0 the context and its ``|`` are dropped: every intermediate of ``Xa`` is ``@Xa``.
  Example, v=2, h=1: ``(TOP (S (NP (DT the) (JJ big) (JJ red) (NN dog)) (VP (VBZ barks))))`` ->
  ``(TOP (S^TOP (NP^S (DT the) (@NP^S|DT (JJ big) (@NP^S|JJ (JJ red) (NN dog)))) (VP^S (VBZ barks))))``.
  On a cleaned, collapsed tree every node then has two children, except ``X -> preterminal`` and
  the ``TOP`` root over one child.
* **base_label**: everything from the first ``^`` or ``|`` is dropped: ``NP^S^VP`` -> ``NP``,
  ``@NP^S|DT_JJ`` -> ``@NP``, ``S+VP^TOP`` -> ``S+VP``.  **is_intermediate**: starts with ``@``.
"""
from __future__ import annotations

from .tree import Tree

__all__ = ["drop_empty_trees", "clean", "collapse_unary", "restore_unary", "binarize", "debinarize", "base_label",
           "is_intermediate", "prepare", "unprepare", "strip_function_tags"]

# ---------------------------------------------------------------------------------------- labels
_strip_cache: dict = {}


def strip_function_tags(label: str) -> str:
    """The category of a treebank label: ``NP-SBJ-1`` -> ``NP``, ``NP=2`` -> ``NP``,
    ``ADVP|PRT`` -> ``ADVP``; ``-LRB-``, ``-RRB-``, ``-NONE-`` (any ``-XXX-``) are returned unchanged."""
    r = _strip_cache.get(label)
    if r is not None:
        return r
    r = label
    if len(r) > 1 and r[0] == "-" and r[-1] == "-":
        pass
    else:
        if "|" in r:
            first = r.split("|", 1)[0]
            if first:
                r = first
        cut = len(r)
        for sep in ("-", "="):
            i = r.find(sep, 1)
            if 0 < i < cut:
                cut = i
        r = r[:cut]
    _strip_cache[label] = r
    return r


_base_cache: dict = {}


def _has_words(t) -> bool:
    stack = [t]
    while stack:
        x = stack.pop()
        ch = x.children
        if len(ch) == 1 and type(ch[0]) is str:
            if x.label != "-NONE-":
                return True
            continue
        stack.extend(c for c in ch if type(c) is not str)
        if any(type(c) is str for c in ch):
            return True
    return False


def drop_empty_trees(trees) -> list:
    """``trees`` without those that have no word once ``-NONE-`` elements are removed (they give no
    training evidence and :func:`clean` refuses them); how many were dropped is logged as a
    warning on the ``fastspectral`` logger."""
    import logging

    out = [t for t in trees if _has_words(t)]
    if len(out) != len(trees):
        logging.getLogger("fastspectral").warning(
            f"skipped {len(trees) - len(out)} tree(s) with no words (only -NONE- elements)")
    return out


def base_label(sym: str) -> str:
    """Strip every annotation: ``NP^S`` -> ``NP``, ``@NP^S|DT_JJ`` -> ``@NP`` (keeps ``@`` and ``+``)."""
    r = _base_cache.get(sym)
    if r is None:
        i = sym.find("^")
        j = sym.find("|")
        if j >= 0 and (i < 0 or j < i):
            i = j
        r = sym if i < 0 else sym[:i]
        _base_cache[sym] = r
    return r


def is_intermediate(sym: str) -> bool:
    """True for an intermediate symbol introduced by :func:`binarize` (starts with ``@``)."""
    return sym[:1] == "@"


_valid_labels: set = set()


def _check_label(label: str):
    if label in _valid_labels:
        return
    if "^" in label or "|" in label or label[:1] == "@":
        raise ValueError(f"label {label!r} uses a character reserved for binarisation "
                         "('^', '|' or a leading '@'); clean the tree first")
    _valid_labels.add(label)


# ---------------------------------------------------------------------------------------- clean
def clean(t: Tree) -> Tree:
    """Cleaned copy of a treebank tree: function tags and indices stripped, ``-NONE-`` elements and
    the constituents left empty removed, root labelled ``TOP`` (see module docstring).

    Raises ``ValueError`` if nothing but empty elements is left."""
    strip = strip_function_tags
    values = []  # postorder results (Tree, str or None)
    push_v = values.append
    stack = [t]
    pop, push = stack.pop, stack.append
    while stack:
        x = pop()
        if type(x) is tuple:  # second visit: assemble
            node = x[0]
            k = len(node.children)
            kids = [c for c in values[-k:] if c is not None]
            del values[-k:]
            push_v(Tree(strip(node.label), kids) if kids else None)
            continue
        if type(x) is str:
            push_v(x)
            continue
        ch = x.children
        if len(ch) == 1 and type(ch[0]) is str:
            push_v(None if x.label == "-NONE-" else Tree(strip(x.label), [ch[0]]))
            continue
        if not ch:
            push_v(None)
            continue
        push((x,))
        stack.extend(reversed(ch))
    r = values[0]
    if r is None:
        raise ValueError("tree has no words left after removing -NONE- elements")
    if t.label in ("", "TOP", "ROOT") and not r.is_preterminal():
        r.label = "TOP"
    else:
        r = Tree("TOP", [r])
    return r


# ---------------------------------------------------------------------------------------- unary chains
def _is_phrasal(x) -> bool:
    if type(x) is str:
        return False
    ch = x.children
    return not (len(ch) == 1 and type(ch[0]) is str)


def _chain(c):
    """Follow the unary phrasal chain below ``c``: return (bottom node, ``A+B+...`` label)."""
    label = c.label
    if "+" in label:
        raise ValueError(f"label {label!r} already contains '+'; cannot collapse unary chains")
    x = c
    while True:
        ch = x.children
        if len(ch) != 1:
            return x, label
        y = ch[0]
        if type(y) is str:
            return x, label
        ych = y.children
        if len(ych) == 1 and type(ych[0]) is str:  # preterminal: chain stops above it
            return x, label
        if "+" in y.label:
            raise ValueError(f"label {y.label!r} already contains '+'; cannot collapse unary chains")
        label = label + "+" + y.label
        x = y


def _copy_unary(src, dst, collapse):
    """Copy the tree below ``src`` under ``dst`` (top-down), words and preterminals as they are.
    With ``collapse`` each other node is the merged unary chain below it (:func:`_chain`); else
    (``dst`` unlabelled) each node's label ``A+B+C`` is restored as the chain ``A -> B -> C``."""
    stack = [(src, dst)]
    pop, push = stack.pop, stack.append
    while stack:
        src, dst = pop()
        if not collapse:
            label = src.label
            if "+" in label:
                parts = label.split("+")
                dst.label = parts[0]
                for p in parts[1:]:
                    n = Tree(p, [])
                    dst.children.append(n)
                    dst = n
            else:
                dst.label = label
        out = dst.children
        for c in src.children:
            if type(c) is str:
                out.append(c)
                continue
            cch = c.children
            if len(cch) == 1 and type(cch[0]) is str:
                out.append(Tree(c.label, [cch[0]]))
                continue
            if collapse:
                c, label = _chain(c)
                n = Tree(label, [])
            else:
                n = Tree(None, [])
            out.append(n)
            push((c, n))


def collapse_unary(t: Tree) -> Tree:
    """Merge unary chains of phrasal nodes into one node ``A+B`` (top to bottom); a chain stops
    above a preterminal; a ``TOP`` root is never merged.  Raises ``ValueError`` for a phrasal label
    already containing ``+`` (it could not be restored)."""
    if t.label == "TOP" or not _is_phrasal(t):
        x, label = t, t.label
    else:
        x, label = _chain(t)
    root = Tree(label, [])
    _copy_unary(x, root, True)
    return root


def restore_unary(t: Tree) -> Tree:
    """Inverse of :func:`collapse_unary`: a phrasal node ``A+B+C`` becomes the chain ``A -> B -> C``."""
    root = Tree(None, [])
    _copy_unary(t, root, False)
    return root


# ---------------------------------------------------------------------------------------- binarisation
def binarize(t: Tree, v: int = 1, h: int | None = 1, tag_parent: bool = False) -> Tree:
    """Right-factored binarisation with vertical order ``v`` (>= 1) and horizontal order ``h``
    (>= 0, ``None`` = infinite); see the module docstring for the symbols produced.
    Expects a cleaned, unary-collapsed tree; raises ``ValueError`` on labels using ``^``, ``|`` or a
    leading ``@``."""
    if not isinstance(v, int) or v < 1:
        raise ValueError(f"v must be an int >= 1, got {v!r}")
    if h is not None and (not isinstance(h, int) or h < 0):
        raise ValueError(f"h must be None or an int >= 0, got {h!r}")
    nv = v - 1
    check = _check_label
    valid = _valid_labels
    if t.label:
        check(t.label)
    root = Tree(t.label, [])
    stack = [(t, root, ())]
    pop, push = stack.pop, stack.append
    while stack:
        node, out, anc = pop()
        kids = node.children
        if nv:
            canc = ((node.label,) + anc)[:nv]
            suffix = "^" + "^".join(canc)
        else:
            canc = ()
            suffix = ""
        outs = []
        app = outs.append
        for c in kids:
            if type(c) is str:
                app(c)
                continue
            lab = c.label
            if lab not in valid:
                check(lab)
            cch = c.children
            if len(cch) == 1 and type(cch[0]) is str:
                app(Tree(lab + suffix if tag_parent else lab, [cch[0]]))
            else:
                n = Tree(lab + suffix, [])
                app(n)
                push((c, n, canc))
        n = len(outs)
        if n <= 2:
            out.children = outs
            continue
        labels = [c if type(c) is str else c.label for c in kids]
        prefix = "@" + out.label
        cur = out
        for i in range(1, n - 1):
            if h == 0:
                lab = prefix
            elif h is None:
                lab = prefix + "|" + "_".join(labels[:i])
            else:
                lab = prefix + "|" + "_".join(labels[max(0, i - h):i])
            inter = Tree(lab, [])
            cur.children = [outs[i - 1], inter]
            cur = inter
        cur.children = [outs[n - 2], outs[n - 1]]
    return root


_unannotate_cache: dict = {}


def _unannotate(sym: str) -> str:
    r = _unannotate_cache.get(sym)
    if r is None:
        r = base_label(sym)
        if r[:1] == "@":
            r = r[1:]
        _unannotate_cache[sym] = r
    return r


def debinarize(t: Tree) -> Tree:
    """Inverse of :func:`binarize`: splice intermediate ``@`` nodes into their parent and strip all
    annotations.  Works on any tree using the notation (e.g. parser output); an intermediate at the
    root is turned into its base category."""
    un = _unannotate
    root = Tree(un(t.label), [])
    stack = [(t, root)]
    pop, push = stack.pop, stack.append
    while stack:
        src, dst = pop()
        out = dst.children
        app = out.append
        work = list(reversed(src.children))
        wpop, wext = work.pop, work.extend
        while work:
            c = wpop()
            if type(c) is str:
                app(c)
                continue
            cch = c.children
            if len(cch) == 1 and type(cch[0]) is str:
                app(Tree(un(c.label), [cch[0]]))
            elif c.label[:1] == "@":
                wext(reversed(cch))
            else:
                n = Tree(un(c.label), [])
                app(n)
                push((c, n))
    return root


def prepare(t: Tree, v: int = 1, h: int | None = 1, tag_parent: bool = False) -> Tree:
    """``binarize(collapse_unary(clean(t)), v, h, tag_parent)``: raw treebank tree -> grammar tree."""
    return binarize(collapse_unary(clean(t)), v, h, tag_parent)


def unprepare(t: Tree) -> Tree:
    """``restore_unary(debinarize(t))``: grammar (or parser output) tree -> cleaned treebank tree."""
    return restore_unary(debinarize(t))
