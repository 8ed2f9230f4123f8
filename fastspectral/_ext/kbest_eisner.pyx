# cython: language_level=3
# (boundscheck, wraparound, cdivision and initializedcheck come from setup.py)
"""k-best first-order projective (Eisner) decoding: Huang & Chiang (2005), Algorithm 3.

L. Huang and D. Chiang, "Better k-best parsing", IWPT 2005, section 4, Algorithm 3 ("lazy
k-best"), applied to the hypergraph of Eisner's (1996) first-order algorithm.  Sentences are
packed as in :mod:`fastspectral._ext.eisner`: sentence ``b`` has ``n_b`` words and the
``(n_b+1) x (n_b+1)`` row-major arc scores ``S[h, m]`` at ``scores[off[b]:]``.

The hypergraph.  Vertices are the Eisner items over spans ``s <= t`` of positions ``0..n``:

* ``C0(s,t)`` complete, head ``t``:  edges ``k in [s, t-1]``:  ``C0(s,k) + I0(k,t)``
* ``C1(s,t)`` complete, head ``s``:  edges ``k in [s+1, t]``:  ``I1(s,k) + C1(k,t)``
* ``I0(s,t)`` incomplete, arc ``t -> s`` (``s > 0``): edges ``k in [s, t-1]``:
  ``C1(s,k) + C0(k+1,t) + S[t,s]``
* ``I1(s,t)`` incomplete, arc ``s -> t``: the same tails, ``+ S[s,t]`` (with a single root,
  ``I1(0,t)`` only has ``k = 0``: the root's one modifier)
* axioms ``C0(s,s) = C1(s,s) = 0``; the goal is ``C1(0,n)``.

Every tree has exactly one derivation, so the k best derivations of the goal are the k best
trees.  A Viterbi pass (bottom-up, as in ``eisner.pyx``) gives each vertex's best derivation
``D_1(v)``.  ``LazyKthBest(v, j)`` (Algorithm 3) builds the candidate heap ``cand[v]`` of ``v``
only when its second best is first asked for: every incoming edge with tail ranks ``(1, 1)``
except the Viterbi edge, whose successors are added as for any derivation popped.  Before the
``(j+1)``-th derivation is popped, ``LazyNext`` pushes the successors of the ``j``-th: for an
edge with tail ranks ``(a, b)``, ``(a, b+1)`` always and ``(a+1, b)`` only when ``b = 1``; every
rank pair is then reached from exactly one predecessor of larger or equal score, so the heap
needs no duplicate check (the usual duplicate-free order of a 2-D grid).  Each tail's needed
rank is computed recursively (``LazyKthBest(tail, rank)``), so only the vertices on the way to
the top-k derivations ever get a heap.

Second order (``kbest2_batch``).  The same algorithm over the hypergraph of McDonald &
Pereira's (2006) second-order projective algorithm (the recursions of ``eisner2.pyx``, whose
packed arc and sibling scores it takes): one more vertex type, the sibling span
``SB(s,t)`` (edges ``k in [s, t-1]``: ``C1(s,k) + C0(k+1,t)``), and the incomplete items'
edges carry the sibling score of their split:

* ``I1(s,t)``: ``k = s``: ``C0(s+1,t)`` alone (``t`` is ``s``'s innermost right modifier,
  ``+ G[s,s,t]``); ``k in [s+1, t-1]``: ``I1(s,k) + SB(k,t) + G[s,k,t]``; all ``+ A[s,t]``
  (with a single root, ``I1(0,t)`` only has ``k = 0``)
* ``I0(s,t)`` (``s > 0``): ``k = t``: ``C1(s,t-1)`` alone (``+ G[t,t,s]``);
  ``k in [s+1, t-1]``: ``SB(s,k) + I0(k,t) + G[t,k,s]``; all ``+ A[t,s]``
* ``C0``, ``C1`` as at first order.

An edge with one tail takes an axiom (one derivation, score 0) as its second, so every edge
is binary and the lazy machinery is shared.  Every tree again has exactly one derivation.

Outputs: ``count[b]`` trees (``<= k``; fewer when the sentence has fewer projective trees of
finite score), tree ``r`` of sentence ``b`` at ``heads[hoff[b] + r * n_b :]`` (1-based, 0 =
root) with score ``kscores[b * k + r]``, best first.  Sentences run in parallel (OpenMP), one
private chart each; a sentence whose chart or heaps cannot be allocated is a ``MemoryError``
naming it (``status.pxd``).
"""
import numpy as np
cimport numpy as cnp
from cython.parallel import prange
from libc.math cimport INFINITY
from .alloc cimport malloc, calloc, free, grow, fail_after
from .packed_check cimport check_packed, check_sibling_blocks
from .status cimport ST_OK, ST_NO_MEMORY
from ._status import raise_for_status

cnp.import_array()

DEF C0 = 0
DEF C1 = 1
DEF I0 = 2
DEF I1 = 3
DEF SB = 4


cdef struct Deriv:
    double score
    int k          # the edge: split point
    int j1, j2     # 0-based ranks of the tail derivations


cdef struct Vertex:
    Deriv* d       # derivations found, best first (d[0]: the Viterbi derivation)
    int nd
    cnp.int64_t capd
    Deriv* cand    # max-heap of candidate derivations
    int nc
    cnp.int64_t capc
    int heap_ready # cand[v] built
    int expanded   # successors of d[nd-1] already pushed


cdef struct Chart:
    int n1
    int nt         # vertex types: 4 (first order) or 5 (second order: + SB)
    int single_root
    int failed     # out of memory
    const double* S
    const double* G  # second order: the (n+1)^3 sibling scores G[h, s, m]; NULL at first order
    double* best   # Viterbi score of each vertex
    int* bk        # Viterbi edge of each vertex
    Vertex* v


cdef inline int _vid(int s, int t, int typ, const Chart* c) noexcept nogil:
    return (s * c.n1 + t) * c.nt + typ


cdef inline void _split(int vid, const Chart* c, int* s, int* t, int* typ) noexcept nogil:
    """The span ``(s, t)`` and type of vertex ``vid`` (inverse of :func:`_vid`)."""
    cdef int cell = vid // c.nt
    typ[0] = vid - cell * c.nt
    s[0] = cell // c.n1
    t[0] = cell - s[0] * c.n1


cdef inline void _tails(int s, int t, int typ, int k, const Chart* c, int* a, int* b) noexcept nogil:
    if typ == C0:
        a[0] = _vid(s, k, C0, c); b[0] = _vid(k, t, I0, c)
    elif typ == C1:
        a[0] = _vid(s, k, I1, c); b[0] = _vid(k, t, C1, c)
    elif c.G == NULL or typ == SB:
        a[0] = _vid(s, k, C1, c); b[0] = _vid(k + 1, t, C0, c)
    elif typ == I1:
        if k == s:                  # t is s's innermost right modifier: C0(s+1,t) + an axiom
            a[0] = _vid(s + 1, t, C0, c); b[0] = _vid(t, t, C0, c)
        else:
            a[0] = _vid(s, k, I1, c); b[0] = _vid(k, t, SB, c)
    else:                           # I0
        if k == t:                  # s is t's innermost left modifier: C1(s,t-1) + an axiom
            a[0] = _vid(s, t - 1, C1, c); b[0] = _vid(s, s, C0, c)
        else:
            a[0] = _vid(s, k, SB, c); b[0] = _vid(k, t, I0, c)


cdef inline double _weight(const Chart* c, int s, int t, int typ) noexcept nogil:
    """The arc score of an incomplete vertex (shared by all its edges)."""
    if typ == I1:
        return c.S[s * c.n1 + t]
    if typ == I0:
        return c.S[t * c.n1 + s]
    return 0.0


cdef inline double _edge_weight(const Chart* c, int s, int t, int typ, int k) noexcept nogil:
    """The sibling score of edge ``k`` of an incomplete vertex (second order; 0 otherwise)."""
    cdef Py_ssize_t n1 = c.n1
    if c.G == NULL:
        return 0.0
    if typ == I1:
        return c.G[(s * n1 + k) * n1 + t]
    if typ == I0:
        return c.G[(t * n1 + k) * n1 + s]
    return 0.0


cdef inline void _edge_range(const Chart* c, int s, int t, int typ, int* lo, int* hi) noexcept nogil:
    """Split points ``lo..hi`` (inclusive) of the incoming edges; ``hi < lo``: none."""
    if s == t:
        lo[0] = 1; hi[0] = 0
    elif typ == C0:
        lo[0] = s; hi[0] = t - 1
    elif typ == C1:
        lo[0] = s + 1; hi[0] = t
    elif typ == I0 and s == 0:
        lo[0] = 1; hi[0] = 0          # the root is never a modifier
    elif typ == I0 and c.G != NULL:
        lo[0] = s + 1; hi[0] = t      # k = t: no closer sibling
    else:                             # I1, SB; I0 at first order
        lo[0] = s; hi[0] = t - 1
        if typ == I1 and s == 0 and c.single_root:
            hi[0] = 0


cdef void _viterbi(Chart* c) noexcept nogil:
    """Bottom-up 1-best of every vertex (``best``, ``bk``), exactly the recursions of
    ``eisner.pyx`` (first order) and ``eisner2.pyx`` (second order)."""
    cdef int n1 = c.n1
    cdef int w, s, t, typ, k, lo, hi, a, b, bestk, ii
    cdef double v, bestv, wt
    # within a span: SB first (shorter spans only), then I0, I1, then C0, C1 (use I)
    cdef int[5] types
    types[0] = SB; types[1] = I0; types[2] = I1; types[3] = C0; types[4] = C1
    cdef int first = 5 - c.nt
    for s in range(n1):
        for typ in range(c.nt):
            c.best[_vid(s, s, typ, c)] = 0.0 if typ <= C1 else -INFINITY
            c.bk[_vid(s, s, typ, c)] = -1
    for w in range(1, n1):
        for s in range(0, n1 - w):
            t = s + w
            for ii in range(first, 5):
                typ = types[ii]
                _edge_range(c, s, t, typ, &lo, &hi)
                bestv = -INFINITY
                bestk = -1
                wt = _weight(c, s, t, typ)
                for k in range(lo, hi + 1):
                    _tails(s, t, typ, k, c, &a, &b)
                    v = c.best[a] + c.best[b] + _edge_weight(c, s, t, typ, k)
                    if v > bestv:
                        bestv = v
                        bestk = k
                c.best[_vid(s, t, typ, c)] = bestv + wt if bestk >= 0 else -INFINITY
                c.bk[_vid(s, t, typ, c)] = bestk


cdef inline int _room(Chart* c, Deriv** arr, cnp.int64_t* capacity, int size,
                      int first) noexcept nogil:
    """Make room for one more ``Deriv`` in the growable array ``arr[0]`` holding ``size``
    (capacity ``first``, then doubling: :func:`alloc.grow`); 0 (and ``c.failed``) when out of
    memory."""
    if grow(<void**> arr, capacity, size + 1, first, sizeof(Deriv), NULL, 0) != ST_OK:
        c.failed = 1
        return 0
    return 1


cdef int _push_d(Chart* c, Vertex* V, Deriv x) noexcept nogil:
    if not _room(c, &V.d, &V.capd, V.nd, 4):
        return 0
    V.d[V.nd] = x
    V.nd += 1
    return 1


cdef inline int _better(Deriv* x, Deriv* y) noexcept nogil:
    """Heap order: higher score first; ties by split point and ranks (deterministic)."""
    if x.score != y.score:
        return x.score > y.score
    if x.k != y.k:
        return x.k < y.k
    if x.j1 != y.j1:
        return x.j1 < y.j1
    return x.j2 < y.j2


cdef int _heap_push(Chart* c, Vertex* V, Deriv x) noexcept nogil:
    cdef int i, parent
    cdef Deriv tmp
    if not _room(c, &V.cand, &V.capc, V.nc, 8):
        return 0
    i = V.nc
    V.cand[i] = x
    V.nc += 1
    while i > 0:
        parent = (i - 1) >> 1
        if _better(&V.cand[i], &V.cand[parent]):
            tmp = V.cand[i]; V.cand[i] = V.cand[parent]; V.cand[parent] = tmp
            i = parent
        else:
            break
    return 1


cdef Deriv _heap_pop(Vertex* V) noexcept nogil:
    cdef Deriv top = V.cand[0]
    cdef Deriv tmp
    cdef int i = 0, l, r, m
    V.nc -= 1
    V.cand[0] = V.cand[V.nc]
    while True:
        l = 2 * i + 1
        r = l + 1
        m = i
        if l < V.nc and _better(&V.cand[l], &V.cand[m]):
            m = l
        if r < V.nc and _better(&V.cand[r], &V.cand[m]):
            m = r
        if m == i:
            break
        tmp = V.cand[i]; V.cand[i] = V.cand[m]; V.cand[m] = tmp
        i = m
    return top


cdef inline double _dscore(Chart* c, int vid, int j) noexcept nogil:
    return c.v[vid].d[j].score


cdef void _push_candidate(Chart* c, Vertex* V, int vid, int k, int j1, int j2) noexcept nogil:
    """Push edge ``k`` with tail ranks ``(j1, j2)`` when both tails have that many derivations."""
    cdef int s, t, typ, a, b
    cdef Deriv x
    _split(vid, c, &s, &t, &typ)
    _tails(s, t, typ, k, c, &a, &b)
    if not _kth(c, a, j1) or not _kth(c, b, j2):
        return
    x.score = (_weight(c, s, t, typ) + _edge_weight(c, s, t, typ, k) + _dscore(c, a, j1)
               + _dscore(c, b, j2))
    if x.score == -INFINITY:
        return
    x.k = k; x.j1 = j1; x.j2 = j2
    _heap_push(c, V, x)


cdef void _lazy_next(Chart* c, Vertex* V, int vid, Deriv* last) noexcept nogil:
    """Successors of ``last`` (LazyNext), duplicate-free: ``(a, b+1)``; ``(a+1, b)`` if b = 0."""
    cdef int k = last.k, j1 = last.j1, j2 = last.j2
    _push_candidate(c, V, vid, k, j1, j2 + 1)
    if j2 == 0:
        _push_candidate(c, V, vid, k, j1 + 1, j2)


cdef int _kth(Chart* c, int vid, int j) noexcept nogil:
    """LazyKthBest(v, j): make sure ``D(v)`` holds ``j + 1`` derivations; 0 when it cannot."""
    cdef Vertex* V = &c.v[vid]
    cdef int typ, s, t, lo, hi, k
    cdef Deriv x, last
    if j < V.nd:
        return 1
    if c.failed:
        return 0
    if V.nd == 0:                       # the Viterbi derivation
        if c.best[vid] == -INFINITY:
            return 0
        x.score = c.best[vid]; x.k = c.bk[vid]; x.j1 = 0; x.j2 = 0
        if not _push_d(c, V, x):
            return 0
        V.expanded = 0
        if j == 0:
            return 1
    if c.bk[vid] < 0:                   # an axiom: one derivation
        return 0
    if not V.heap_ready:                # GetCandidates(v): every other edge at ranks (0, 0)
        V.heap_ready = 1
        _split(vid, c, &s, &t, &typ)
        _edge_range(c, s, t, typ, &lo, &hi)
        for k in range(lo, hi + 1):
            if k != V.d[0].k:
                _push_candidate(c, V, vid, k, 0, 0)
    while V.nd <= j:
        if not V.expanded:
            last = V.d[V.nd - 1]
            V.expanded = 1
            _lazy_next(c, V, vid, &last)
            V = &c.v[vid]
        if V.nc == 0 or c.failed:
            return 0
        x = _heap_pop(V)
        if not _push_d(c, V, x):
            return 0
        V.expanded = 0
    return 1


cdef void _extract(Chart* c, int vid, int j, int* heads, int* stack) noexcept nogil:
    """The heads of derivation ``j`` of ``vid`` (explicit stack of (vertex, rank) pairs)."""
    cdef int top = 1, typ, s, t, a, b
    cdef Deriv* x
    stack[0] = vid; stack[1] = j
    while top > 0:
        top -= 1
        vid = stack[2 * top]; j = stack[2 * top + 1]
        if not _kth(c, vid, j):        # rank 0 of a tail may not be materialised yet
            continue
        x = &c.v[vid].d[j]
        if x.k < 0:
            continue
        _split(vid, c, &s, &t, &typ)
        if typ == I0:
            heads[s - 1] = t
        elif typ == I1:
            heads[t - 1] = s
        _tails(s, t, typ, x.k, c, &a, &b)
        stack[2 * top] = a; stack[2 * top + 1] = x.j1; top += 1
        stack[2 * top] = b; stack[2 * top + 1] = x.j2; top += 1


cdef int _kbest_one(const double* S, const double* G, int n, int K, int single_root,
                    int* heads, double* scores) noexcept nogil:
    """The ``K`` best trees of one sentence (second order when ``G`` is not NULL); returns
    how many were found, or ``ST_NO_MEMORY`` (-1)."""
    cdef int n1 = n + 1
    cdef Chart c
    cdef int r, i, found = 0, goal
    cdef int* stack
    c.n1 = n1
    c.nt = 4 if G == NULL else 5
    c.single_root = single_root
    c.failed = 0
    c.S = S
    c.G = G
    cdef Py_ssize_t nv = c.nt * <Py_ssize_t> n1 * n1
    c.best = <double*> malloc(nv * sizeof(double))
    c.bk = <int*> malloc(nv * sizeof(int))
    c.v = <Vertex*> calloc(nv, sizeof(Vertex))
    # a derivation has at most 10 (n + 1) vertices (axioms included): the stack bound
    stack = <int*> malloc(2 * (10 * n1 + 8) * sizeof(int))
    if c.best == NULL or c.bk == NULL or c.v == NULL or stack == NULL:
        free(c.best); free(c.bk); free(c.v); free(stack)
        return ST_NO_MEMORY
    if n == 0:
        found = 0
    else:
        _viterbi(&c)
        goal = _vid(0, n, C1, &c)
        for r in range(K):
            if not _kth(&c, goal, r):
                break
            scores[r] = c.v[goal].d[r].score
            for i in range(n):
                heads[r * n + i] = -1
            _extract(&c, goal, r, &heads[r * n], stack)
            found += 1
    for i in range(nv):
        free(c.v[i].d)
        free(c.v[i].cand)
    if c.failed:
        found = ST_NO_MEMORY
    free(c.best); free(c.bk); free(c.v); free(stack)
    return found


def kbest_batch(const double[::1] scores, const cnp.int64_t[::1] off,
                const cnp.int32_t[::1] lengths, const cnp.int64_t[::1] hoff, int k,
                cnp.int32_t[::1] heads, double[::1] kscores, cnp.int32_t[::1] count,
                int single_root=0, int n_threads=1):
    """The ``k`` best projective trees of a packed batch (see the module docstring).

    ``hoff[b]``: offset of sentence ``b``'s ``k * n_b`` head slots in ``heads``;
    ``kscores[b * k + r]``: score of its tree ``r``; ``count[b]``: trees found.
    ``MemoryError`` (naming the sentence) when a chart could not be allocated.
    """
    cdef Py_ssize_t B = lengths.shape[0]
    cdef Py_ssize_t b
    if k < 1:
        raise ValueError("k must be >= 1")
    check_packed(scores, off, lengths, hoff, heads.shape[0], count.shape[0], k, 4096)   # KBEST_MAX_WORDS of rerank/kbest.py
    if kscores.shape[0] < B * k:
        raise ValueError("kscores shorter than batch * k")
    if n_threads < 1:
        n_threads = 1
    with nogil:
        for b in prange(B, num_threads=n_threads, schedule="dynamic"):
            count[b] = _kbest_one(&scores[off[b]], NULL, lengths[b], k, single_root,
                                  <int*> &heads[hoff[b]], &kscores[b * k])
    # count[b] >= 0 trees, or ST_NO_MEMORY: the count array is the status array
    raise_for_status(np.asarray(count)[:B], "k-best Eisner", lengths)
    return None


def kbest2_batch(const double[::1] arcs, const cnp.int64_t[::1] aoff,
                 const double[::1] sibs, const cnp.int64_t[::1] soff,
                 const cnp.int32_t[::1] lengths, const cnp.int64_t[::1] hoff, int k,
                 cnp.int32_t[::1] heads, double[::1] kscores, cnp.int32_t[::1] count,
                 int single_root=0, int n_threads=1):
    """The ``k`` best projective trees of a packed batch of arc + sibling scores (second
    order; the layout of ``eisner2.eisner2_batch``, the outputs of :func:`kbest_batch`).

    ``MemoryError`` (naming the sentence) when a chart could not be allocated.
    """
    cdef Py_ssize_t B = lengths.shape[0]
    cdef Py_ssize_t b
    if k < 1:
        raise ValueError("k must be >= 1")
    check_packed(arcs, aoff, lengths, hoff, heads.shape[0], count.shape[0], k, 4095)   # EISNER2_MAX_WORDS
    if kscores.shape[0] < B * k:
        raise ValueError("kscores shorter than batch * k")
    check_sibling_blocks(sibs, soff, lengths)
    if n_threads < 1:
        n_threads = 1
    with nogil:
        for b in prange(B, num_threads=n_threads, schedule="dynamic"):
            count[b] = _kbest_one(&arcs[aoff[b]], &sibs[soff[b]], lengths[b], k, single_root,
                                  <int*> &heads[hoff[b]], &kscores[b * k])
    raise_for_status(np.asarray(count)[:B], "second-order k-best Eisner", lengths)
    return None


def _fail_allocations_after(long k):
    """Tests: the ``k``-th allocation of this module from now on and every later one fail
    (``k < 0``: allocations succeed again); see ``alloc.h``."""
    fail_after(k)
