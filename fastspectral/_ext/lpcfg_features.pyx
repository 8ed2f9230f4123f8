# cython: language_level=3
# (boundscheck, wraparound, cdivision and initializedcheck come from setup.py, so that
# FASTSPECTRAL_BOUNDSCHECK=1 can switch the checks on: a directive here would override it)
"""Inside / outside tree-fragment features of the nodes of binarised trees, as 64-bit keys.

Input: the nodes of many trees concatenated (each tree in preorder) with, per node, its parent,
left and right child (global indices, -1 when absent), its side under the parent (0 left, 1 right,
2 unary child, 3 root), a *rule code* (the rule at the node: binary rule, unary rule, or
preterminal -> word), a second lexical code for preterminals (word shape/suffix class), its span
and tree, plus the POS tags of every tree's tokens.

Output: ``keys_in`` (n_nodes, 6) and ``keys_out`` (n_nodes, 6) int64 hashed feature keys,
0 meaning "template absent".  Templates (``code(x)`` is the rule code of node ``x``):

inside                                       outside
  1 code(node)                                 1 (code(parent), side)
  2 (code(node), code(left child))             2 (code(parent), side, code(grandparent), side(parent))
  3 (code(node), code(right child))            3 (2 + code(great-grandparent), side(grandparent))
  4 (first POS, last POS) of the span          4 (POS before the span, POS after the span)
  5 span length (bucketed)                     5 (code(parent), side, code(sibling))
  6 (code(node), lexical class) at preterminals 6 (side, words to the left, words to the right), bucketed

The keys are made unique per node label by the caller; feature ids, counts and scaling are
computed with NumPy and the CSR matrices are filled directly from these arrays.
"""
import numpy as np
cimport numpy as cnp
from libc.stdint cimport uint64_t, int64_t

ctypedef cnp.int32_t i32
ctypedef cnp.int64_t i64

cdef enum:
    K = 6


cdef inline uint64_t _mix(uint64_t h, uint64_t v) noexcept nogil:
    # splitmix64-style combination; collisions between distinct tuples are ~2^-64
    h ^= v + <uint64_t> 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2)
    h ^= h >> 30
    h *= <uint64_t> 0xBF58476D1CE4E5B9ULL
    h ^= h >> 27
    h *= <uint64_t> 0x94D049BB133111EBULL
    h ^= h >> 31
    return h


cdef inline int64_t _key(uint64_t h) noexcept nogil:
    cdef int64_t k = <int64_t> (h >> 1)
    if k == 0:
        k = 1
    return k


cdef inline int _bucket(int n) noexcept nogil:
    if n <= 4:
        return n
    if n <= 6:
        return 5
    if n <= 9:
        return 6
    if n <= 14:
        return 7
    if n <= 19:
        return 8
    if n <= 29:
        return 9
    return 10


def _check_nodes(parent, left, right, side, start, end, tree, tok_off, tree_len, tags):
    """Every index the kernel follows is in range (``ValueError`` otherwise): node links in
    ``[-1, n)``, trees in ``[0, len(tree_len))``, spans inside their tree's tokens, a right
    child's parent with a left child."""
    n = np.asarray(parent).shape[0]
    if n == 0:
        return
    par, lft, rgt = np.asarray(parent), np.asarray(left), np.asarray(right)
    for name, a in (("parent", par), ("left", lft), ("right", rgt)):
        if a.min() < -1 or a.max() >= n:
            raise ValueError(f"{name} node index out of range")
    sd = np.asarray(side)
    if sd.min() < 0 or sd.max() > 3:
        raise ValueError("node side must be 0 .. 3")
    tr = np.asarray(tree)
    nt = np.asarray(tree_len).shape[0]
    if tr.min() < 0 or tr.max() >= nt or np.asarray(tok_off).shape[0] < nt:
        raise ValueError("tree index out of range")
    st, en = np.asarray(start, dtype=np.int64), np.asarray(end, dtype=np.int64)
    ln = np.asarray(tree_len, dtype=np.int64)[tr]
    off = np.asarray(tok_off, dtype=np.int64)[tr]
    if st.min() < 0 or np.any(en <= st) or np.any(en > ln) or off.min() < 0 or \
            np.any(off + ln > np.asarray(tags).shape[0]):
        raise ValueError("node span outside its tree's tokens")
    has_parent = par >= 0
    if np.any(lft[par[has_parent & (sd == 1)]] < 0):
        raise ValueError("a right child whose parent has no left child")


def node_feature_keys(const i32[::1] parent, const i32[::1] left, const i32[::1] right,
                      const i32[::1] side, const i64[::1] code, const i64[::1] lexclass,
                      const i32[::1] start, const i32[::1] end, const i32[::1] tree,
                      const i64[::1] tok_off, const i32[::1] tree_len, const i32[::1] tags):
    """Hashed inside and outside feature keys for every node (see the module docstring)."""
    cdef Py_ssize_t n = parent.shape[0]
    cdef cnp.ndarray[i64, ndim=2] kin = np.zeros((n, K), dtype=np.int64)
    cdef cnp.ndarray[i64, ndim=2] kout = np.zeros((n, K), dtype=np.int64)
    cdef i64[:, ::1] ki = kin
    cdef i64[:, ::1] ko = kout
    cdef Py_ssize_t i
    cdef int p, gp, ggp, t, s, e, L
    cdef uint64_t h, hp
    cdef i64 off
    if not (left.shape[0] == n and right.shape[0] == n and side.shape[0] == n and code.shape[0] == n
            and lexclass.shape[0] == n and start.shape[0] == n and end.shape[0] == n
            and tree.shape[0] == n):
        raise ValueError("node arrays must have equal lengths")
    _check_nodes(parent, left, right, side, start, end, tree, tok_off, tree_len, tags)
    with nogil:
        for i in range(n):
            t = tree[i]
            off = tok_off[t]
            L = tree_len[t]
            s = start[i]
            e = end[i]
            # ---- inside ----
            h = _mix(1, <uint64_t> code[i])
            ki[i, 0] = _key(h)
            if left[i] >= 0:
                ki[i, 1] = _key(_mix(_mix(2, <uint64_t> code[i]), <uint64_t> code[left[i]]))
            if right[i] >= 0:
                ki[i, 2] = _key(_mix(_mix(3, <uint64_t> code[i]), <uint64_t> code[right[i]]))
            ki[i, 3] = _key(_mix(_mix(4, <uint64_t> tags[off + s]), <uint64_t> tags[off + e - 1]))
            ki[i, 4] = _key(_mix(5, <uint64_t> _bucket(e - s)))
            if lexclass[i] >= 0:
                ki[i, 5] = _key(_mix(_mix(6, <uint64_t> code[i]), <uint64_t> lexclass[i]))
            # ---- outside ----
            p = parent[i]
            if p < 0:
                ko[i, 0] = _key(_mix(11, 0xFFFF))
            else:
                hp = _mix(_mix(11, <uint64_t> code[p]), <uint64_t> side[i])
                ko[i, 0] = _key(hp)
                gp = parent[p]
                if gp >= 0:
                    hp = _mix(_mix(_mix(12, hp), <uint64_t> code[gp]), <uint64_t> side[p])
                    ko[i, 1] = _key(hp)
                    ggp = parent[gp]
                    if ggp >= 0:
                        ko[i, 2] = _key(_mix(_mix(_mix(13, hp), <uint64_t> code[ggp]),
                                             <uint64_t> side[gp]))
                if side[i] == 0 and right[p] >= 0:
                    ko[i, 4] = _key(_mix(_mix(_mix(15, <uint64_t> code[p]), 0),
                                         <uint64_t> code[right[p]]))
                elif side[i] == 1:
                    ko[i, 4] = _key(_mix(_mix(_mix(15, <uint64_t> code[p]), 1),
                                         <uint64_t> code[left[p]]))
            ko[i, 3] = _key(_mix(_mix(14, <uint64_t> (tags[off + s - 1] if s > 0 else -1)),
                                 <uint64_t> (tags[off + e] if e < L else -2)))
            ko[i, 5] = _key(_mix(_mix(_mix(16, <uint64_t> side[i]), <uint64_t> _bucket(s)),
                                 <uint64_t> _bucket(L - e)))
    return kin, kout
