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

The templates follow S. B. Cohen, K. Stratos, M. Collins, D. P. Foster and L. Ungar,
"Experiments with spectral learning of latent-variable PCFGs", NAACL 2013 (inside and outside
tree-fragment features); ``binary_rule_tensors`` accumulates the empirical moments of the
spectral algorithm of S. B. Cohen et al., "Spectral learning of latent-variable PCFGs",
ACL 2012.  No allocation of its own: every array comes from NumPy.
"""
import numpy as np
cimport numpy as cnp
from libc.math cimport sqrt
from libc.stdint cimport uint64_t, int64_t
from scipy.linalg.cython_blas cimport dgemm

ctypedef cnp.int32_t i32
ctypedef cnp.int64_t i64

cdef enum:
    K = 6
    _NB = 128          # nodes per dgemm block of binary_rule_tensors


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


# ------------------------------------------------------------------------------------------------
# the smoothed rule moments of the spectral estimate (fastspectral.lpcfg.estimate.smoothed_triple)
# ------------------------------------------------------------------------------------------------
def binary_rule_tensors(const i64[::1] rules, const i64[::1] rptr, const i64[::1] order,
                        const i32[::1] left, const i32[::1] right, const i64[::1] row,
                        const i32[::1] bin_parent, const i32[::1] bin_left,
                        const i32[::1] bin_right, const i64[::1] m, const i64[::1] proj_off,
                        const double[::1] Y, const double[::1] Z, const double[::1] weight,
                        double C, const i64[::1] toff, double[::1] tensors,
                        const double[::1] mean_y, const double[::1] mean_z,
                        const i64[::1] mean_off, bint three_level):
    """``tensors[toff[r]:toff[r+1]] = weight[r] * S_r`` for every rule ``r`` of ``rules``, with
    ``S_r`` the smoothed ``E_r[z (x) y_left (x) y_right]`` of
    :func:`fastspectral.lpcfg.estimate.smoothed_triple` over the nodes
    ``order[rptr[r]:rptr[r+1]]`` (``rptr`` has a row per rule; every listed rule has nodes).

    The projections of symbol ``a`` are the rows of ``Z`` (outside) and ``Y`` (inside) from
    ``proj_off[a]``, ``m[a]`` values per row; node ``i`` is row ``row[i]`` of its label's
    block.  Per rule, blocks of ``_NB`` nodes are gathered into ``Lb`` (rows
    ``[z (x) y_b, z, y_b]``) and ``Rb`` (rows ``[y_c, 1]``) and one BLAS ``dgemm`` adds
    ``Lb^T Rb``: the third moment, the three second moments and the sum of ``z`` at once
    (equal to NumPy's products up to rounding).  ``three_level``: the smoothing of
    ``moment_backoff="symbol"``, with the symbols' mean projections ``mean_z`` / ``mean_y``
    (``m[a]`` values of symbol ``a`` from ``mean_off[a]``); else the two levels of ``"rule"``
    (the means unread).  The caller
    (:func:`fastspectral.lpcfg.fast_moments.binary_rule_tensors`) checks every index and runs
    BLAS single-threaded."""
    cdef Py_ssize_t nr = rules.shape[0]
    cdef int mmax = 1
    cdef Py_ssize_t q
    for q in range(m.shape[0]):
        if m[q] > mmax:
            mmax = <int> m[q]
    cdef double[::1] acc = np.zeros((mmax * mmax + 2 * mmax) * (mmax + 1))
    cdef double[::1] lb = np.zeros(_NB * (mmax * mmax + 2 * mmax))
    cdef double[::1] rb = np.zeros(_NB * (mmax + 1))
    cdef double[::1] s2 = np.zeros(mmax)
    cdef double[::1] s3 = np.zeros(mmax)
    cdef Py_ssize_t k, j, j0, x, y, zz, node
    cdef int a, b, c, ma, mb, mc, P, Q, nb, pz
    cdef i64 r, n
    cdef const double* za
    cdef const double* yb
    cdef const double* yc
    cdef double* lr
    cdef double* rr
    cdef double lam, rt, w_low, w_uni, w_sym, dn, wr, u, e2, zx, hz, fy
    cdef const double* hza
    cdef const double* fyb
    cdef const double* fyc
    cdef double* out
    cdef double one = 1.0
    cdef char tn = b'N'
    cdef char tt = b'T'
    with nogil:
        for k in range(nr):
            r = rules[k]
            a = bin_parent[r]
            b = bin_left[r]
            c = bin_right[r]
            ma = <int> m[a]
            mb = <int> m[b]
            mc = <int> m[c]
            pz = ma * mb                # Lb columns: [z (x) yb | z | yb];  Rb columns: [yc | 1]
            P = pz + ma + mb
            Q = mc + 1
            n = rptr[r + 1] - rptr[r]
            for x in range(P * Q):
                acc[x] = 0.0
            for y in range(mb):
                s2[y] = 0.0
            for zz in range(mc):
                s3[zz] = 0.0
            j0 = rptr[r]
            while j0 < rptr[r + 1]:
                nb = <int> min(<i64> _NB, rptr[r + 1] - j0)
                for j in range(nb):
                    node = order[j0 + j]
                    za = &Z[proj_off[a] + row[node] * ma]
                    yb = &Y[proj_off[b] + row[left[node]] * mb]
                    yc = &Y[proj_off[c] + row[right[node]] * mc]
                    lr = &lb[j * P]
                    rr = &rb[j * Q]
                    for x in range(ma):
                        zx = za[x]
                        for y in range(mb):
                            lr[x * mb + y] = zx * yb[y]
                        lr[pz + x] = zx
                    for y in range(mb):
                        s2[y] += yb[y]
                        lr[pz + ma + y] = yb[y]
                    for zz in range(mc):
                        rr[zz] = yc[zz]
                        s3[zz] += yc[zz]
                    rr[mc] = 1.0
                # acc (row-major P x Q) += Lb^T Rb; column-major: acc^T (Q x P) = Rb^T Lb
                dgemm(&tn, &tt, &Q, &P, &nb, &one, &rb[0], &Q, &lb[0], &P, &one, &acc[0], &Q)
                j0 += nb
            # E3[x,y,z] = acc[(x mb + y) Q + z], E12[x,y] = acc[(x mb + y) Q + mc],
            # E13[x,z] = acc[(pz + x) Q + z], sum z[x] = acc[(pz + x) Q + mc]
            dn = <double> n
            wr = weight[r]
            out = &tensors[toff[r]]
            if C <= 0:
                for x in range(pz):
                    for zz in range(mc):
                        out[x * mc + zz] = wr * (acc[x * Q + zz] / dn)
                continue
            rt = sqrt(dn)
            lam = rt / (C + rt)
            if three_level:
                # Cohen et al. (2013), section 3.2: the three second-order terms, then the
                # product of the rule's means interpolated with the product of the symbols'
                w_low = (1.0 - lam) * lam / 3.0
                w_uni = (1.0 - lam) * (1.0 - lam) * lam
                w_sym = (1.0 - lam) * (1.0 - lam) * (1.0 - lam)
                hza = &mean_z[mean_off[a]]
                fyb = &mean_y[mean_off[b]]
                fyc = &mean_y[mean_off[c]]
                for x in range(ma):
                    zx = acc[(pz + x) * Q + mc] / dn
                    hz = w_sym * hza[x]
                    for y in range(mb):
                        e2 = s2[y] / dn
                        fy = hz * fyb[y]
                        u = (w_low * (acc[(x * mb + y) * Q + mc] / dn) + w_uni * (zx * e2))
                        for zz in range(mc):
                            out[(x * mb + y) * mc + zz] = wr * (
                                lam * (acc[(x * mb + y) * Q + zz] / dn)
                                + u * (s3[zz] / dn)
                                + (w_low * (acc[(pz + x) * Q + zz] / dn)) * e2
                                + (w_low * zx) * (acc[(pz + ma + y) * Q + zz] / dn)
                                + fy * fyc[zz])
                continue
            w_low = 0.5 * (1.0 - lam) * lam
            w_uni = (1.0 - lam) * (1.0 - lam)
            for x in range(ma):
                for y in range(mb):
                    e2 = s2[y] / dn
                    u = (w_low * (acc[(x * mb + y) * Q + mc] / dn)
                         + w_uni * ((acc[(pz + x) * Q + mc] / dn) * e2))
                    for zz in range(mc):
                        out[(x * mb + y) * mc + zz] = wr * (
                            lam * (acc[(x * mb + y) * Q + zz] / dn)
                            + u * (s3[zz] / dn)
                            + (w_low * (acc[(pz + x) * Q + zz] / dn)) * e2)
