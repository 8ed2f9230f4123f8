# cython: language_level=3
# (boundscheck, wraparound, cdivision and initializedcheck come from setup.py, so that
# FASTSPECTRAL_BOUNDSCHECK=1 can switch the checks on: a directive here would override it)
"""Inside-outside for split head-automaton grammars (SHAG) with state-vector charts.

J. Eisner and G. Satta, "Efficient parsing for bilexical context-free grammars and head
automaton grammars", ACL 1999 (split head automata, the O(n^3) chart); F. M. Luque, A. Quattoni,
B. Balle and X. Carreras, "Spectral learning for non-deterministic dependency parsing", EACL 2012,
section 4 (inside-outside with operator automata, eqs. 1-2).

The model scoring a tree is the product of two split head automata run in lockstep:

* an *operator* automaton (spectral or EM), indexed by symbols: for head symbol ``h``,
  direction ``d`` (0 = left, 1 = right) and modifier symbol ``a``:
  ``alpha1[h, d]`` (N), ``beta[h, d]`` (N), ``A[h, d, a]`` (N x N, column convention:
  the state after a modifier is ``A @ state``);
* a *deterministic* automaton with ``K`` states (state 0 first), given per sentence as
  arc weights ``lw[h, m, k]`` (weight of modifier ``m`` of head ``h`` in state ``k``), stop
  weights ``ls[h, d, k]`` and the transition ``next_state[k, cls[m]]``.

The joint state is ``N*K`` (index ``i*K + k``).  A head's modifier sequence in direction ``d``
(head-outwards) ``m_1 .. m_T`` has weight ``stop(A_{m_T} .. A_{m_1} init)``.  The tree weight
is the product over all heads (position 0 = root, right direction only) and directions.

Charts (spans s <= t): CR[s,t] head s, right half complete but not stopped; CL[s,t] head t;
IR[s,t] arc s -> t; IL[s,t] arc t -> s; SR / SL the stopped (scalar) complete spans.
Every item of width w is stored divided by a per-width scale sigma_w (chosen adaptively,
kept in log form) so that long sentences neither underflow nor overflow; arc marginals
are scale-free.  The outside pass is the exact adjoint (reverse mode) of the inside pass,
so marginals are correct also for operator models with negative entries (spectral).

Cost per sentence: O(n^3 N K + n^2 N^2 K) time, O(n^2 N K) memory.  A sentence whose chart
cannot be allocated is a ``MemoryError`` naming it (``status.pxd``).
"""
import numpy as np
cimport numpy as cnp
from cython.parallel import prange
from .alloc cimport malloc, calloc, free, fail_after
from .status cimport ST_OK, ST_NO_MEMORY
from ._status import raise_for_status
from libc.math cimport exp, log, fabs, isfinite, INFINITY, NAN

cnp.import_array()


cdef struct Model:
    const double* alpha1     # [H, 2, N]
    const double* beta       # [H, 2, N]
    const double* A          # [H, 2, M, N, N]
    const int* next_state    # [K, C]
    int H
    int M
    int N
    int K
    int C
    int single_root


cdef struct Sent:
    const int* hsym      # head symbol per position (n+1)
    const int* msym      # modifier symbol per position (n+1)
    const int* cls       # class per position (n+1)
    const double* lw     # [(n+1), (n+1), K]
    const double* ls     # [(n+1), 2, K]
    int n


cdef inline const double* _opA(const Model* md, const Sent* st, int h, int d, int m) noexcept nogil:
    return md.A + ((((<Py_ssize_t> st.hsym[h]) * 2 + d) * md.M + st.msym[m]) * md.N * md.N)


cdef inline void _apply(const Model* md, const Sent* st, int h, int d, int m,
                        const double* v, double* out, double* w) noexcept nogil:
    """out = (operator of arc h->m) v   (w: scratch of size N*K)."""
    cdef int N = md.N, K = md.K, D = md.N * md.K
    cdef int n1 = st.n + 1
    cdef int i, ip, k, kn, c = st.cls[m]
    cdef const double* lw = st.lw + ((<Py_ssize_t> h) * n1 + m) * K
    cdef const double* A = _opA(md, st, h, d, m)
    cdef double acc
    for i in range(D):
        w[i] = 0.0
    for k in range(K):
        kn = md.next_state[k * md.C + c]
        for i in range(N):
            w[i * K + kn] += lw[k] * v[i * K + k]
    for ip in range(N):
        for kn in range(K):
            acc = 0.0
            for i in range(N):
                acc = acc + A[ip * N + i] * w[i * K + kn]
            out[ip * K + kn] = acc


cdef inline void _apply_adj(const Model* md, const Sent* st, int h, int d, int m,
                            const double* g, double* gv, double* w) noexcept nogil:
    """gv = (operator of arc h->m)^T g  (overwrites gv)."""
    cdef int N = md.N, K = md.K
    cdef int n1 = st.n + 1
    cdef int i, ip, k, kn, c = st.cls[m]
    cdef const double* lw = st.lw + ((<Py_ssize_t> h) * n1 + m) * K
    cdef const double* A = _opA(md, st, h, d, m)
    cdef double acc
    for i in range(N):
        for kn in range(K):
            acc = 0.0
            for ip in range(N):
                acc = acc + A[ip * N + i] * g[ip * K + kn]
            w[i * K + kn] = acc
    for k in range(K):
        kn = md.next_state[k * md.C + c]
        for i in range(N):
            gv[i * K + k] = lw[k] * w[i * K + kn]


cdef inline void _stopvec(const Model* md, const Sent* st, int h, int d, double* out) noexcept nogil:
    cdef int N = md.N, K = md.K
    cdef int i, k
    cdef const double* b = md.beta + ((<Py_ssize_t> st.hsym[h]) * 2 + d) * N
    cdef const double* ls = st.ls + ((<Py_ssize_t> h) * 2 + d) * K
    for i in range(N):
        for k in range(K):
            out[i * K + k] = b[i] * ls[k]


cdef inline double _dot(const double* a, const double* b, int D) noexcept nogil:
    cdef double acc = 0.0
    cdef int i
    for i in range(D):
        acc = acc + a[i] * b[i]
    return acc


cdef inline void _axpy(double a, const double* x, double* y, int D) noexcept nogil:
    cdef int i
    for i in range(D):
        y[i] += a * x[i]


cdef int _inside_outside(const Model* md, const Sent* st, double* mu, double* logz) noexcept nogil:
    """Arc marginals of one sentence into mu[(n+1)*(n+1)] (row head, column modifier).

    Returns ``ST_OK`` (0), 1 when the total weight is zero or not finite, ``ST_NO_MEMORY``.
    """
    cdef int n = st.n
    cdef int n1 = n + 1
    cdef int D = md.N * md.K
    cdef int N = md.N, K = md.K
    cdef Py_ssize_t P = (<Py_ssize_t> n1) * n1
    cdef double* CR = <double*> calloc(P * D, sizeof(double))
    cdef double* CL = <double*> calloc(P * D, sizeof(double))
    cdef double* IR = <double*> calloc(P * D, sizeof(double))
    cdef double* IL = <double*> calloc(P * D, sizeof(double))
    cdef double* gCR = <double*> calloc(P * D, sizeof(double))
    cdef double* gCL = <double*> calloc(P * D, sizeof(double))
    cdef double* gIR = <double*> calloc(P * D, sizeof(double))
    cdef double* gIL = <double*> calloc(P * D, sizeof(double))
    cdef double* SR = <double*> calloc(P, sizeof(double))
    cdef double* SL = <double*> calloc(P, sizeof(double))
    cdef double* gSR = <double*> calloc(P, sizeof(double))
    cdef double* gSL = <double*> calloc(P, sizeof(double))
    cdef double* lsig = <double*> calloc(n1 + 1, sizeof(double))
    cdef double* fac = <double*> calloc(n1 + 1, sizeof(double))
    cdef double* tmp = <double*> calloc(D, sizeof(double))
    cdef double* scr = <double*> calloc(D, sizeof(double))
    cdef double* stv = <double*> calloc(D, sizeof(double))
    cdef int status = ST_OK
    cdef int w, s, t, k, m, i, kmax, a
    cdef Py_ssize_t ix
    cdef double c, M, z, v
    cdef const double* al
    if (CR == NULL or CL == NULL or IR == NULL or IL == NULL or gCR == NULL or gCL == NULL
            or gIR == NULL or gIL == NULL or SR == NULL or SL == NULL or gSR == NULL
            or gSL == NULL or lsig == NULL or fac == NULL or tmp == NULL or scr == NULL
            or stv == NULL):
        status = ST_NO_MEMORY
    else:
        for i in range(n1 * n1):
            mu[i] = 0.0
        # ---- width 0: initial states --------------------------------------------------
        for s in range(n1):
            ix = (<Py_ssize_t> s) * n1 + s
            for a in range(2):
                al = md.alpha1 + ((<Py_ssize_t> st.hsym[s]) * 2 + a) * N
                for i in range(N):
                    for k in range(K):
                        if a == 0:
                            CL[ix * D + i * K + k] = al[i] if k == 0 else 0.0
                        else:
                            CR[ix * D + i * K + k] = al[i] if k == 0 else 0.0
            _stopvec(md, st, s, 1, stv)
            SR[ix] = _dot(stv, &CR[ix * D], D)
            _stopvec(md, st, s, 0, stv)
            SL[ix] = _dot(stv, &CL[ix * D], D)
        lsig[0] = 0.0
        # ---- inside ------------------------------------------------------------------
        for w in range(1, n1):
            # provisional scale of width w: geometric extrapolation of the last two widths
            if w == 1:
                lsig[w] = 0.0
            elif w == 2:
                lsig[w] = lsig[1] * 2.0
            else:
                lsig[w] = 2.0 * lsig[w - 1] - lsig[w - 2]
            # fac[a] = sigma_a * sigma_{w-1-a} / sigma_w (incomplete items: widths a + b = w-1)
            for a in range(w):
                fac[a] = exp(lsig[a] + lsig[w - 1 - a] - lsig[w])
            for s in range(0, n1 - w):
                t = s + w
                ix = (<Py_ssize_t> s) * n1 + t
                # IR[s,t]: arc s -> t
                kmax = t - 1
                if s == 0 and md.single_root:
                    kmax = 0
                for i in range(D):
                    tmp[i] = 0.0
                for k in range(s, kmax + 1):
                    c = SL[(<Py_ssize_t> (k + 1)) * n1 + t] * fac[k - s]
                    if c != 0.0:
                        _axpy(c, &CR[((<Py_ssize_t> s) * n1 + k) * D], tmp, D)
                _apply(md, st, s, 1, t, tmp, &IR[ix * D], scr)
                # IL[s,t]: arc t -> s (the root is never a modifier)
                if s >= 1:
                    for i in range(D):
                        tmp[i] = 0.0
                    for k in range(s, t):
                        c = SR[(<Py_ssize_t> s) * n1 + k] * fac[k - s]
                        if c != 0.0:
                            _axpy(c, &CL[((<Py_ssize_t> (k + 1)) * n1 + t) * D], tmp, D)
                    _apply(md, st, t, 0, s, tmp, &IL[ix * D], scr)
            # complete items: widths (m - s) + (t - m) = w, factor sigma_{m-s} sigma_{t-m} / sigma_w
            for a in range(w + 1):
                fac[a] = exp(lsig[a] + lsig[w - a] - lsig[w])
            for s in range(0, n1 - w):
                t = s + w
                ix = (<Py_ssize_t> s) * n1 + t
                for m in range(s + 1, t + 1):
                    c = SR[(<Py_ssize_t> m) * n1 + t] * fac[m - s]
                    if c != 0.0:
                        _axpy(c, &IR[((<Py_ssize_t> s) * n1 + m) * D], &CR[ix * D], D)
                if s >= 1:
                    for m in range(s, t):
                        c = SL[(<Py_ssize_t> s) * n1 + m] * fac[m - s]
                        if c != 0.0:
                            _axpy(c, &IL[((<Py_ssize_t> m) * n1 + t) * D], &CL[ix * D], D)
            # rescale width w so that its largest entry is 1
            M = 0.0
            for s in range(0, n1 - w):
                ix = ((<Py_ssize_t> s) * n1 + s + w) * D
                for i in range(D):
                    v = fabs(CR[ix + i])
                    if v > M:
                        M = v
                    v = fabs(CL[ix + i])
                    if v > M:
                        M = v
                    v = fabs(IR[ix + i])
                    if v > M:
                        M = v
                    v = fabs(IL[ix + i])
                    if v > M:
                        M = v
            if M > 0.0 and isfinite(M):
                c = 1.0 / M
                for s in range(0, n1 - w):
                    ix = ((<Py_ssize_t> s) * n1 + s + w) * D
                    for i in range(D):
                        CR[ix + i] *= c
                        CL[ix + i] *= c
                        IR[ix + i] *= c
                        IL[ix + i] *= c
                lsig[w] += log(M)
            for s in range(0, n1 - w):
                t = s + w
                ix = (<Py_ssize_t> s) * n1 + t
                _stopvec(md, st, s, 1, stv)
                SR[ix] = _dot(stv, &CR[ix * D], D)
                if s >= 1:
                    _stopvec(md, st, t, 0, stv)
                    SL[ix] = _dot(stv, &CL[ix * D], D)
        z = SR[n]          # SR[0, n]
        if n == 0 or z == 0.0 or not isfinite(z):
            status = 1
            logz[0] = NAN
        else:
            logz[0] = log(fabs(z)) + lsig[n]
            # ---- outside (adjoint of the inside pass) ---------------------------------
            gSR[n] = 1.0 / z
            for w in range(n, 0, -1):
                # complete items of width w
                for a in range(w + 1):
                    fac[a] = exp(lsig[a] + lsig[w - a] - lsig[w])
                for s in range(0, n1 - w):
                    t = s + w
                    ix = (<Py_ssize_t> s) * n1 + t
                    if gSR[ix] != 0.0:
                        _stopvec(md, st, s, 1, stv)
                        _axpy(gSR[ix], stv, &gCR[ix * D], D)
                    for m in range(s + 1, t + 1):
                        c = fac[m - s]
                        _axpy(SR[(<Py_ssize_t> m) * n1 + t] * c, &gCR[ix * D],
                              &gIR[((<Py_ssize_t> s) * n1 + m) * D], D)
                        gSR[(<Py_ssize_t> m) * n1 + t] += c * _dot(
                            &gCR[ix * D], &IR[((<Py_ssize_t> s) * n1 + m) * D], D)
                    if s >= 1:
                        if gSL[ix] != 0.0:
                            _stopvec(md, st, t, 0, stv)
                            _axpy(gSL[ix], stv, &gCL[ix * D], D)
                        for m in range(s, t):
                            c = fac[m - s]
                            _axpy(SL[(<Py_ssize_t> s) * n1 + m] * c, &gCL[ix * D],
                                  &gIL[((<Py_ssize_t> m) * n1 + t) * D], D)
                            gSL[(<Py_ssize_t> s) * n1 + m] += c * _dot(
                                &gCL[ix * D], &IL[((<Py_ssize_t> m) * n1 + t) * D], D)
                # incomplete items of width w
                for a in range(w):
                    fac[a] = exp(lsig[a] + lsig[w - 1 - a] - lsig[w])
                for s in range(0, n1 - w):
                    t = s + w
                    ix = (<Py_ssize_t> s) * n1 + t
                    mu[(<Py_ssize_t> s) * n1 + t] = _dot(&gIR[ix * D], &IR[ix * D], D)
                    _apply_adj(md, st, s, 1, t, &gIR[ix * D], tmp, scr)
                    kmax = t - 1
                    if s == 0 and md.single_root:
                        kmax = 0
                    for k in range(s, kmax + 1):
                        c = fac[k - s]
                        _axpy(SL[(<Py_ssize_t> (k + 1)) * n1 + t] * c, tmp,
                              &gCR[((<Py_ssize_t> s) * n1 + k) * D], D)
                        gSL[(<Py_ssize_t> (k + 1)) * n1 + t] += c * _dot(
                            tmp, &CR[((<Py_ssize_t> s) * n1 + k) * D], D)
                    if s >= 1:
                        mu[(<Py_ssize_t> t) * n1 + s] = _dot(&gIL[ix * D], &IL[ix * D], D)
                        _apply_adj(md, st, t, 0, s, &gIL[ix * D], tmp, scr)
                        for k in range(s, t):
                            c = fac[k - s]
                            gSR[(<Py_ssize_t> s) * n1 + k] += c * _dot(
                                tmp, &CL[((<Py_ssize_t> (k + 1)) * n1 + t) * D], D)
                            _axpy(SR[(<Py_ssize_t> s) * n1 + k] * c, tmp,
                                  &gCL[((<Py_ssize_t> (k + 1)) * n1 + t) * D], D)
    free(CR); free(CL); free(IR); free(IL); free(gCR); free(gCL); free(gIR); free(gIL)
    free(SR); free(SL); free(gSR); free(gSL); free(lsig); free(fac); free(tmp); free(scr)
    free(stv)
    return status


def inside_outside_batch(const double[:, :, ::1] alpha1, const double[:, :, ::1] beta,
                         const double[:, :, :, :, ::1] A, const int[:, ::1] next_state,
                         const int[::1] hsym, const int[::1] msym, const int[::1] cls,
                         const cnp.int64_t[::1] tok_off, const double[::1] lw,
                         const double[::1] ls, const cnp.int64_t[::1] pair_off,
                         double[::1] mu, double[::1] logz, int[::1] status,
                         int single_root=0, int n_threads=1):
    """Arc marginals for a packed batch of sentences (see the module docstring).

    Sentence ``b`` has positions ``tok_off[b] .. tok_off[b+1]-1`` in ``hsym/msym/cls``
    (position 0 is the root), its ``(n+1)^2`` block of ``mu`` starts at ``pair_off[b]``,
    its arc weights ``lw`` at ``pair_off[b] * K`` and its stop weights ``ls`` at
    ``tok_off[b] * 2 * K``.  ``mu[h, m]`` is the posterior probability of arc h -> m,
    ``logz[b]`` the log of |total weight| and ``status[b]`` 0 (ok) or 1 (total weight zero or
    not finite: marginals are zero); ``MemoryError`` naming the sentence when its chart cannot
    be allocated.
    """
    cdef Model md
    cdef Py_ssize_t B = tok_off.shape[0] - 1
    cdef Py_ssize_t b, n
    cdef Sent* sents
    cdef int H = alpha1.shape[0], N = alpha1.shape[2], M = A.shape[2], K = next_state.shape[0]
    cdef int C = next_state.shape[1]
    if beta.shape[0] != H or beta.shape[2] != N or A.shape[0] != H or A.shape[3] != N \
            or A.shape[4] != N or alpha1.shape[1] != 2 or beta.shape[1] != 2 or A.shape[1] != 2:
        raise ValueError("inconsistent operator array shapes")
    if B < 0 or pair_off.shape[0] < B or logz.shape[0] < B or status.shape[0] < B:
        raise ValueError("inconsistent batch arrays")
    if H < 1 or N < 1 or M < 1 or K < 1 or C < 1:
        raise ValueError("empty operator or deterministic automaton")
    if B > 0 and tok_off[0] < 0:
        raise ValueError("token offsets must start at 0 or later")
    for b in range(B):
        n = tok_off[b + 1] - tok_off[b] - 1
        if n < 0 or n > 32767 or tok_off[b + 1] > hsym.shape[0] or \
                tok_off[b + 1] > msym.shape[0] or tok_off[b + 1] > cls.shape[0]:
            raise ValueError("token block of sentence %d out of range" % b)
        if pair_off[b] < 0 or pair_off[b] + (n + 1) * (n + 1) > mu.shape[0] or \
                (pair_off[b] + (n + 1) * (n + 1)) * K > lw.shape[0] or \
                tok_off[b + 1] * 2 * K > ls.shape[0]:
            raise ValueError("pair block of sentence %d out of range" % b)
    cdef Py_ssize_t j
    for j in range(hsym.shape[0]):
        if hsym[j] < 0 or hsym[j] >= H or msym[j] < 0 or msym[j] >= M or cls[j] < 0 or cls[j] >= C:
            raise ValueError("symbol or class id out of range at token %d" % j)
    for j in range(K * C):
        if next_state[j // C, j % C] < 0 or next_state[j // C, j % C] >= K:
            raise ValueError("next_state entry out of range")
    md.alpha1 = &alpha1[0, 0, 0]
    md.beta = &beta[0, 0, 0]
    md.A = &A[0, 0, 0, 0, 0]
    md.next_state = &next_state[0, 0]
    md.H = H
    md.M = M
    md.N = N
    md.K = K
    md.C = C
    md.single_root = single_root
    if n_threads < 1:
        n_threads = 1
    if B == 0:
        return None
    sents = <Sent*> malloc(B * sizeof(Sent))
    if sents == NULL:
        raise MemoryError("SHAG inside-outside: cannot allocate the batch's sentence table")
    for b in range(B):
        sents[b].hsym = &hsym[tok_off[b]]
        sents[b].msym = &msym[tok_off[b]]
        sents[b].cls = &cls[tok_off[b]]
        sents[b].lw = &lw[pair_off[b] * K]
        sents[b].ls = &ls[tok_off[b] * 2 * K]
        sents[b].n = <int> (tok_off[b + 1] - tok_off[b] - 1)
    try:
        with nogil:
            for b in prange(B, num_threads=n_threads, schedule="dynamic"):
                status[b] = _inside_outside(&md, &sents[b], &mu[pair_off[b]], &logz[b])
    finally:
        free(sents)
    raise_for_status(np.asarray(status)[:B], "SHAG inside-outside",
                     np.diff(np.asarray(tok_off)[:B + 1]) - 1)
    return None


def _fail_allocations_after(long k):
    """Tests: the ``k``-th allocation of this module from now on and every later one fail
    (``k < 0``: allocations succeed again); see ``alloc.h``."""
    fail_after(k)
