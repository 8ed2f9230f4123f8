"""Shared pieces of the unsupervised constituency parsers: reading words and tags from trees
or tagged sentences, punctuation removal, tag ids, and building the output trees."""
from __future__ import annotations

from ..trees.tree import Tree, as_tree
from ..trees.universal_tags import is_punctuation_tag, to_universal

__all__ = ["tagged_sentences", "map_tags", "strip_punctuation", "build_tree", "gold_top_split",
           "TAG_MAPS"]

#: the ``tag_map`` of the unsupervised parsers: Penn tags mapped to the universal tags, or kept
TAG_MAPS = ("universal", "as-is")


def tagged_sentences(items) -> list:
    """``[(words, tags), ...]`` of training items: trees (their preterminals; ``-NONE-``
    elements dropped; ``nltk.Tree`` objects too) or ``(words, tags)`` pairs."""
    if isinstance(items, (str, bytes)):
        raise TypeError("fit takes a list of trees or (words, tags) pairs, not a string")
    out = []
    for i, it in enumerate(items, 1):
        it = as_tree(it)                           # an nltk.Tree is converted
        if isinstance(it, Tree):
            pos = [(w, t) for w, t in it.pos() if t != "-NONE-"]
            out.append(([w for w, _ in pos], [t for _, t in pos]))
        elif isinstance(it, (tuple, list)) and len(it) == 2 and isinstance(it[1], (list, tuple)) \
                and (not it[1] or isinstance(it[1][0], str)) and isinstance(it[0], (list, tuple)):
            words, tags = list(it[0]), list(it[1])
            if len(words) != len(tags):
                raise ValueError(f"item {i}: {len(words)} words but {len(tags)} tags")
            out.append((words, tags))
        else:
            raise TypeError(f"item {i}: expected a Tree or a (words, tags) pair, got "
                            f"{type(it).__name__} (these parsers learn from tagged sentences)")
    return out


def map_tags(tags, tagset):
    return to_universal(tags) if tagset == "universal" else list(tags)


def strip_punctuation(tags):
    """Indices of the words kept (tags not punctuation)."""
    return [i for i, t in enumerate(tags) if not is_punctuation_tag(t)]


def build_tree(words, tags, keep, nodes, label="X"):
    """The output tree of a sentence: ``nodes`` are the internal nodes ``(start, end, split)``
    over the kept words (indices into ``keep``), preorder; the removed (punctuation) words are
    put back as children of the lowest node that spans both their neighbours (of the root at
    the ends).  Tags are the pre-terminals."""
    n = len(keep)
    leaves = [Tree(t, [w]) for w, t in zip(words, tags)]
    if n == 0:
        return Tree(label, leaves) if leaves else Tree(label, [])
    # punctuation between kept word i-1 and i goes into gap i (0..n)
    gaps = [[] for _ in range(n + 1)]
    k = 0
    for i in range(len(words)):
        if k < n and keep[k] == i:
            k += 1
        else:
            gaps[k].append(leaves[i])
    split = {}
    for x, y, m in nodes:
        split[(int(x), int(y))] = int(m)

    def make(x, y, top=False):
        if y - x == 1:
            node = leaves[keep[x]]
            return node if not top else Tree(label, gaps[0] + [node] + gaps[1])
        m = split[(x, y)]
        kids = [make(x, m), *gaps[m], make(m, y)]
        if top:
            kids = gaps[0] + kids + gaps[n]
        return Tree(label, kids)

    # iterative would avoid deep recursion; sentence lengths keep it shallow enough
    import sys
    if n > 900:
        sys.setrecursionlimit(max(sys.getrecursionlimit(), 2 * n + 100))
    return make(0, n, top=True)


def gold_top_split(tree) -> int:
    """The top split of a gold tree after punctuation removal: the first node (from the root
    down) with two or more children that hold words; the number of words left of its
    second such child.  0 for sentences of fewer than two words."""
    node = tree
    offset = 0

    def count(t):
        return sum(1 for _, tag in t.pos() if tag != "-NONE-" and not is_punctuation_tag(tag))

    while True:
        if isinstance(node, str) or node.is_preterminal():
            return 0
        kids = [(c, count(c)) for c in node.children if not isinstance(c, str)]
        full = [(c, k) for c, k in kids if k > 0]
        if len(full) >= 2:
            return offset + full[0][1]
        if not full:
            return 0
        # descend into the only child with words, counting the words left of it (none)
        node = full[0][0]
