"""Brute-force enumeration of dependency trees, shared by the Eisner, inside-outside and
k-best Eisner tests."""
from __future__ import annotations

import itertools
from functools import lru_cache


def is_tree(heads):
    """True when following the 1-based ``heads`` (0 = root) from every word reaches the root."""
    n = len(heads)
    for i in range(1, n + 1):
        seen = set()
        j = i
        while j != 0:
            if j in seen:
                return False
            seen.add(j)
            j = heads[j - 1]
    return True


def is_projective(heads):
    """True when no two arcs of ``heads`` cross."""
    arcs = [(min(h, m), max(h, m)) for m, h in enumerate(heads, 1)]
    return not any(a < c < b < d for a, b in arcs for c, d in arcs)


@lru_cache(maxsize=None)
def all_projective_trees(n, single_root):
    """Every projective tree of ``n`` words (tuples of heads), by enumerating all head tuples;
    ``single_root``: exactly one word attached to the root."""
    out = []
    for heads in itertools.product(range(n + 1), repeat=n):
        if any(h == m for m, h in enumerate(heads, 1)):
            continue
        if single_root and sum(h == 0 for h in heads) != 1:
            continue
        if is_tree(heads) and is_projective(heads):
            out.append(heads)
    return out
