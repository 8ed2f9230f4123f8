"""Compiled kernels of the latent-variable dependency model (Numba, ``cache=True``).

:func:`tree_log_prob` is Algorithm 1 of Dhillon, Rodu, Collins, Foster & Ungar (2012), the
bottom-up recursion that computes the (spectral) probability of the words of a dependency tree
given its structure, for many trees in one call (``prange`` across trees).  For every node ``i``
with word ``x_i``, taken children-first::

    eta_i = leaf[x_i]                                        (= D(x_i) c_inf, eq. of sec. 3.3)
    for each left child  c (nearest first):  eta_i = E_L(eta_c) eta_i
    for each right child c (nearest first):  eta_i = E_R(eta_c) eta_i
    p(tree) = prod_{roots r} c_1 . eta_r

With STOP events (the model with valency, ``LatentDependencyModel(stop_events=True)``) every
node also gets ``eta_i = S_L eta_i`` after its left children and ``eta_i = S_R eta_i`` after
its right ones (the STOP pseudo-child, outermost on each side).

with ``E_d(v)[a, b] = sum_j E_d[a, b, j] v[j]`` (the directional edge operators).  Each
``eta_i`` is rescaled to max-norm 1 and the scales are summed in log space, so long sentences
neither under- nor overflow; the sign of the product is kept apart (spectral estimates may be
negative).

The same kernel evaluates the *true* model of :mod:`fastspectral.latentdep.synthetic` (in the
hidden-state basis ``E_d[a, b, j] = delta_ab T_d[j, a]``, ``leaf[x] = O[x, :]``, ``c_1 = pi``),
which the tests check against brute-force summation over hidden states.

The candidates of a k-best list share most of their subtrees: with ``groups=`` both scores
compute each partial subtree once per list (:func:`_tree_log_prob_lists`).

Kept as one module (about 710 lines): the tree-by-tree and the list kernels of both scores
share the tree walk, the operator products and the status codes.
"""
from __future__ import annotations

import numpy as np
from .._jit import njit, prange

__all__ = ["tree_log_prob", "check_trees", "STATUS_OK", "STATUS_RANGE", "STATUS_CYCLE",
           "STATUS_NOROOT"]

STATUS_OK, STATUS_RANGE, STATUS_CYCLE, STATUS_NOROOT = 0, 1, 2, 3


@njit(cache=True, nogil=True)
def _order(parent, a, n, order, start, child):
    """Children lists (CSR: ``start``, ``child``, children in sentence order) and a
    parents-first order of the nodes of the tree ``parent[a:a+n]`` (local 0-based parents, -1
    for roots).  Returns a status code."""
    for i in range(n + 1):
        start[i] = 0
    nroot = 0
    for i in range(n):
        p = parent[a + i]
        if p < -1 or p >= n or p == i:
            return STATUS_RANGE
        if p == -1:
            nroot += 1
        else:
            start[p + 1] += 1
    if n > 0 and nroot == 0:
        return STATUS_NOROOT
    for i in range(n):
        start[i + 1] += start[i]
    fill = start[:n].copy()
    for i in range(n):
        p = parent[a + i]
        if p >= 0:
            child[fill[p]] = i
            fill[p] += 1
    # breadth-first from the roots: parents before children
    k = 0
    for i in range(n):
        if parent[a + i] == -1:
            order[k] = i
            k += 1
    h = 0
    while h < k:
        v = order[h]
        h += 1
        for q in range(start[v], start[v + 1]):
            order[k] = child[q]
            k += 1
    if k != n:
        return STATUS_CYCLE          # some node is not reachable from a root: a cycle
    return STATUS_OK


@njit(cache=True, nogil=True)
def _tree(parent, a, n):
    """Children lists and a bottom-up order of the tree at ``parent[a:a+n]`` (see
    :func:`_order`): ``(status, order, start, child)``."""
    order = np.empty(n, np.int64)
    start = np.empty(n + 1, np.int64)
    child = np.empty(max(n, 1), np.int64)
    st = _order(parent, a, n, order, start, child)
    return st, order, start, child


@njit(cache=True, parallel=True)
def check_trees(offsets, parent):
    """Status code of each tree (0: a valid forest; 1: a head out of range or a self-loop;
    2: a cycle; 3: no root)."""
    ns = offsets.shape[0] - 1
    status = np.zeros(ns, np.int64)
    for s in prange(ns):
        a = offsets[s]
        n = offsets[s + 1] - a
        status[s] = _tree(parent, a, n)[0]
    return status


@njit(cache=True, nogil=True, fastmath=True)
def _apply(E, vc, eta, tmp, out):
    """out[a] = sum_{b, j} E[a, b, j] vc[j] eta[b]  (the edge operator E_d(vc) applied to eta).

    ``E`` is read as ``(m*m, m)``: ``tmp[a*m + b] = sum_j E[a, b, j] vc[j]`` is one pass over
    contiguous memory (vectorised with ``fastmath``), then ``out = tmp.reshape(m, m) @ eta``."""
    m = eta.shape[0]
    E2 = E.reshape(m * m, m)
    for r in range(m * m):
        t = 0.0
        for j in range(m):
            t += E2[r, j] * vc[j]
        tmp[r] = t
    for a in range(m):
        acc = 0.0
        for b in range(m):
            acc += tmp[a * m + b] * eta[b]
        out[a] = acc


@njit(cache=True, nogil=True, inline="always")
def _open_tree(offsets, parent, s, status, r1, r2):
    """Tree ``s``: its first token ``a``, length ``n`` and the children lists and order of
    :func:`_tree`; sets ``status[s]``, and ``r1[s] = r2[s] = nan`` (the results) when the tree
    is not valid."""
    a = offsets[s]
    n = offsets[s + 1] - a
    st, order, start, child = _tree(parent, a, n)
    status[s] = st
    if st != STATUS_OK:
        r1[s] = np.nan
        r2[s] = np.nan
    return a, n, order, start, child


@njit(cache=True, nogil=True, inline="always")
def _start_node(leaf, w, start, child, i, cur):
    """``cur <- leaf[w]`` (the start vector of node ``i``, word row ``w``) and the range of its
    children ``child[lo:hi]`` (sentence order), split at ``split``: the left children are
    ``child[lo:split]`` (those before ``i``), the right ones ``child[split:hi]``."""
    for q in range(cur.shape[0]):
        cur[q] = leaf[w, q]
    lo = start[i]
    hi = start[i + 1]
    split = lo
    while split < hi and child[split] < i:
        split += 1
    return lo, split, hi


_NO_STOP = np.zeros((0, 0, 0), np.float64)


def _stop_pair(S):
    """``(2, m, m)``: the STOP operator of a side without children, then with children (one
    ``m x m`` operator serves both); None: ``(0, 0, 0)`` (no STOP events)."""
    if S is None:
        return _NO_STOP
    S = np.asarray(S, np.float64)
    if S.ndim == 2:
        S = np.stack([S, S])
    if S.ndim != 3 or S.shape[0] != 2 or S.shape[1] != S.shape[2]:
        raise ValueError(f"a STOP operator is (m, m) or (2, m, m), got shape {S.shape}")
    return np.ascontiguousarray(S)


def tree_log_prob(offsets, parent, words, leaf, E_L, E_R, c1, S_L=None, S_R=None,
                  groups=None):
    """Algorithm 1 over many trees: ``(log|p|, sign, status)`` per tree (see
    :func:`_tree_log_prob`).  ``S_L`` / ``S_R`` (``m x m``, optional): the STOP operators of
    the model with valency (``stop_events=True``), applied to every node after its left
    (right) children (``(2, m, m)``: one for a side without children, one for a side with
    children); None: the paper's model (nothing applied).

    ``groups`` (int64, optional): boundaries of runs of trees over the same words (the
    candidates of one k-best list: ``trees[groups[g]:groups[g + 1]]``); the trees of a run
    share the work of their common partial subtrees (:func:`_tree_log_prob_lists`).  The
    results equal the ungrouped ones up to the order of a sum of logarithms."""
    S_L, S_R = _stop_pair(S_L), _stop_pair(S_R)
    groups = _check_groups(groups, offsets.shape[0] - 1)
    if groups is None:
        return _tree_log_prob(offsets, parent, words, leaf, E_L, E_R, c1, S_L, S_R)
    return _tree_log_prob_lists(offsets, parent, words, leaf, E_L, E_R, c1, S_L, S_R,
                                groups, _chunks(groups))


def _chunks(groups) -> int:
    """Chunks of runs of the list kernels: 8 per Numba thread (balance), each allocating its
    scratch once."""
    import numba

    return max(1, min(groups.shape[0] - 1, 8 * numba.get_num_threads()))


def _check_groups(groups, ns):
    """``groups`` as int64 boundaries of runs over ``ns`` trees; None when there are none
    or no run has two trees (nothing to share: the tree-by-tree kernels)."""
    if groups is None:
        return None
    groups = np.ascontiguousarray(groups, np.int64)
    if groups.ndim != 1 or groups.shape[0] < 1 or groups[0] != 0 or groups[-1] != ns or \
            (np.diff(groups) < 0).any():
        raise ValueError(f"groups must rise from 0 to the number of trees ({ns})")
    return None if (np.diff(groups) <= 1).all() else groups


@njit(cache=True, nogil=True, inline="always")
def _run_sizes(offsets, groups, g, per_node):
    """``(longest tree, states, hash table size)`` of run ``g``: at most ``per_node`` states
    per node and tree besides the start states; the table (a power of 2) at most half full
    with the children's transitions."""
    t0 = groups[g]
    t1 = groups[g + 1]
    n_max = 0
    for s in range(t0, t1):
        n_max = max(n_max, offsets[s + 1] - offsets[s])
    cap = (t1 - t0) * per_node * n_max + n_max + 1
    size = 1
    while size < 2 * (t1 - t0) * n_max + 2:
        size *= 2
    return n_max, cap, size


@njit(cache=True, nogil=True)
def _chunk_sizes(offsets, groups, g0, g1, per_node):
    """The largest of :func:`_run_sizes` over runs ``g0 .. g1 - 1`` (their shared scratch)."""
    n_all, cap_all, size_all = 1, 1, 1
    for g in range(g0, g1):
        n_max, cap, size = _run_sizes(offsets, groups, g, per_node)
        n_all = max(n_all, n_max)
        cap_all = max(cap_all, cap)
        size_all = max(size_all, size)
    return n_all, cap_all, size_all


@njit(cache=True, nogil=True, inline="always")
def _intern(keys, vals, key, new_id):
    """Open-addressing look-up of ``key`` (>= 0) in the table ``keys`` / ``vals`` (size a
    power of 2, empty slots -1): its value, or ``-1 - slot`` when absent (``new_id`` is then
    stored there, so the caller fills state ``new_id``)."""
    mask = keys.shape[0] - 1
    h = (np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(17)
    slot = np.int64(h & np.uint64(mask))
    while True:
        k = keys[slot]
        if k == key:
            return vals[slot]
        if k == -1:
            keys[slot] = key
            vals[slot] = new_id
            return -1 - slot
        slot = (slot + 1) & mask


@njit(cache=True, parallel=True)
def _tree_log_prob_lists(offsets, parent, words, leaf, E_L, E_R, c1, S_L, S_R, groups,
                         n_chunks):
    """:func:`_tree_log_prob` over runs of trees of the same words (k-best lists), ``prange``
    across runs, each partial subtree computed once per run.

    A node's vector after its start and some of its children is a function of the sequence of
    operators applied so far, and a child's operator of the child's finished subtree: a state
    is its node's start state or a transition from a state (the left / right STOP, finishing
    the node, or the operator of a child's finished state, interned by the exact key
    ``(previous state + 1) * 2^32 + 3 + child state``), so two candidates that share a subtree
    share its vectors, its scale (the sum of the logarithms of its nodes' max-norms) and
    whether it is zero (or not finite).  The arithmetic of each vector is that of
    :func:`_tree_log_prob`; only the sum of the scales runs in another order.  Each of the
    ``n_chunks`` chunks of runs allocates its scratch once (no allocation per run).
    """
    ns = offsets.shape[0] - 1
    m = c1.shape[0]
    stop = S_L.shape[0] > 0
    logabs = np.empty(ns, np.float64)
    sign = np.empty(ns, np.float64)
    status = np.zeros(ns, np.int64)
    ng = groups.shape[0] - 1
    for c in prange(n_chunks):              # runs g0..g1, their scratch allocated once
        g0 = ng * c // n_chunks
        g1 = ng * (c + 1) // n_chunks
        n_all, cap_all, size_all = _chunk_sizes(offsets, groups, g0, g1, 4)
        keys = np.empty(size_all, np.int64)   # the children's transitions (open addressing)
        vals = np.empty(size_all, np.int64)
        vec = np.empty((cap_all, m), np.float64)   # a state's vector (a finished node's: eta)
        acc = np.empty(cap_all, np.float64)     # sum of the scales of the finished nodes in it
        bad = np.empty(cap_all, np.int64)       # 0 fine, 1 some vector is 0, 2 not finite
        first = np.empty(n_all, np.int64)       # the start state of each node
        nxt = np.empty((3, cap_all), np.int64)  # a state's next one after STOP L / R, finish
        tmp = np.empty(m * m, np.float64)
        for g in range(g0, g1):
            t0 = groups[g]
            t1 = groups[g + 1]
            if t1 == t0:
                continue
            n_max, cap, size = _run_sizes(offsets, groups, g, 4)
            kg = keys[:size]
            kg[:] = -1
            first[:n_max] = -1
            nxt[:, :cap] = -1
            n_states = 0
            for s in range(t0, t1):
                a, n, order, start, child = _open_tree(offsets, parent, s, status, logabs, sign)
                if status[s] != STATUS_OK:
                    continue
                fin = np.empty(n, np.int64)         # the finished state of each node
                total = 0.0
                sg = 1.0
                worst = 0
                for r in range(n - 1, -1, -1):      # children before parents
                    i = order[r]
                    lo = start[i]
                    hi = start[i + 1]
                    split = lo
                    while split < hi and child[split] < i:
                        split += 1
                    st = first[i]
                    if st < 0:
                        st = first[i] = n_states
                        n_states += 1
                        acc[st] = 0.0
                        bad[st] = 0
                        for z in range(m):
                            vec[st, z] = leaf[words[a + i], z]
                    for q in range(split - 1, lo - 1, -1):       # left children, nearest first
                        st = _step(kg, vals, nxt, vec, acc, bad, st, 3 + fin[child[q]], E_L,
                                   0, tmp, n_states)
                        if st == n_states:
                            n_states += 1
                    if stop:
                        st = _step(kg, vals, nxt, vec, acc, bad, st, 0, S_L,
                                   0 if split == lo else 1, tmp, n_states)
                        if st == n_states:
                            n_states += 1
                    for q in range(split, hi):                   # right children, nearest first
                        st = _step(kg, vals, nxt, vec, acc, bad, st, 3 + fin[child[q]], E_R,
                                   0, tmp, n_states)
                        if st == n_states:
                            n_states += 1
                    if stop:
                        st = _step(kg, vals, nxt, vec, acc, bad, st, 1, S_R,
                                   0 if hi == split else 1, tmp, n_states)
                        if st == n_states:
                            n_states += 1
                    st = _step(kg, vals, nxt, vec, acc, bad, st, 2, E_L, 0, tmp, n_states)
                    if st == n_states:
                        n_states += 1
                    fin[i] = st
                    if bad[st] > worst:
                        worst = bad[st]
                    if parent[a + i] == -1 and bad[st] == 0:
                        v = 0.0
                        for z in range(m):
                            v += c1[z] * vec[st, z]
                        if v == 0.0:
                            worst = max(worst, 1)
                        else:
                            if v < 0.0:
                                sg = -sg
                            total += acc[st] + np.log(abs(v))
                if worst == 2:
                    logabs[s] = np.nan
                    sign[s] = np.nan
                elif worst == 1:
                    logabs[s] = -np.inf
                    sign[s] = 0.0
                else:
                    logabs[s] = total
                    sign[s] = sg
    return logabs, sign, status


@njit(cache=True, nogil=True, inline="always")
def _step(keys, vals, nxt, vec, acc, bad, st, code, E, r, tmp, new_id):
    """The state after transition ``code`` from state ``st``: found, or computed as
    ``new_id`` (the caller counts it).  ``code``: 0 / 1 the left / right STOP operator
    ``E[r]``; 2 finishing the node (max-norm 1, its logarithm added to the scale), these
    three found in ``nxt``; ``3 + c`` the edge operator ``E`` of the finished child state
    ``c``, found in the table ``keys`` / ``vals``."""
    if code < 3:
        got = nxt[code, st]
        if got >= 0:
            return got
        nxt[code, st] = new_id
    else:
        got = _intern(keys, vals, (st + 1) * np.int64(4294967296) + code, new_id)
        if got >= 0:
            return got
    m = vec.shape[1]
    bad[new_id] = bad[st]
    acc[new_id] = acc[st]
    if code >= 3:
        c = code - 3
        bad[new_id] = max(bad[st], bad[c])
        acc[new_id] += acc[c]
        if bad[new_id] == 0:
            _apply(E, vec[c], vec[st], tmp, vec[new_id])
    elif bad[new_id] == 0:
        for z in range(m):
            vec[new_id, z] = vec[st, z]
        if code < 2:
            _mat_apply(E, r, vec[new_id], tmp[:m])
        else:
            big = 0.0
            for z in range(m):
                v = abs(vec[new_id, z])
                if v > big:
                    big = v
            if big == 0.0:
                bad[new_id] = 1
            elif not np.isfinite(big):
                bad[new_id] = 2
            else:
                acc[new_id] += np.log(big)
                for z in range(m):
                    vec[new_id, z] = vec[new_id, z] / big
    return new_id


@njit(cache=True, parallel=True)
def _tree_log_prob(offsets, parent, words, leaf, E_L, E_R, c1, S_L, S_R):
    """Algorithm 1 over many trees: ``(log|p|, sign, status)`` per tree.

    Parameters
    ----------
    offsets : int64 (n_trees + 1,)
        Token ranges of the trees in ``parent`` / ``words``.
    parent : int64 (n_tokens,)
        Local 0-based head of each token, -1 for a root.
    words : int64 (n_tokens,)
        Row of ``leaf`` of each token.
    leaf : float64 (V, m)
        ``D(x) c_inf``: the start vector of a node with word ``x``.
    E_L, E_R : float64 (m, m, m)
        Edge operators (left and right children).
    c1 : float64 (m,)
        The root functional.
    S_L, S_R : float64 (2, m, m) or (0, 0, 0)
        STOP operators (the model with valency): ``eta_i <- S_L[c] eta_i`` after the left
        children of every node (the STOP child is the outermost; ``c`` = 0 when the node has
        no left child, 1 otherwise: the DMV's adjacency, ``stop_adjacency=True``; the same
        operator twice without it), ``S_R`` after the right ones; ``(0, 0, 0)``: none (the
        paper's model, the same arithmetic as without them).

    Returns
    -------
    logabs : float64 (n_trees,) -- ``log |p|`` (``-inf`` when ``p == 0``)
    sign : float64 (n_trees,) -- +1, -1 (or 0 when ``p == 0``)
    status : int64 (n_trees,) -- 0 for a valid tree (see :func:`check_trees`); else NaN results
    """
    ns = offsets.shape[0] - 1
    m = c1.shape[0]
    stop = S_L.shape[0] > 0
    logabs = np.empty(ns, np.float64)
    sign = np.empty(ns, np.float64)
    status = np.zeros(ns, np.int64)
    for s in prange(ns):
        a, n, order, start, child = _open_tree(offsets, parent, s, status, logabs, sign)
        if status[s] != STATUS_OK:
            continue
        eta = np.empty((n, m), np.float64)
        tmp = np.empty(m * m, np.float64)
        cur = np.empty(m, np.float64)
        out = np.empty(m, np.float64)
        total = 0.0
        sg = 1.0
        for r in range(n - 1, -1, -1):          # children before parents
            i = order[r]
            lo, split, hi = _start_node(leaf, words[a + i], start, child, i, cur)
            # apply the nearest child first
            for q in range(split - 1, lo - 1, -1):
                _apply(E_L, eta[child[q]], cur, tmp, out)
                for z in range(m):
                    cur[z] = out[z]
            if stop:
                _mat_apply(S_L, 0 if split == lo else 1, cur, out)
            for q in range(split, hi):
                _apply(E_R, eta[child[q]], cur, tmp, out)
                for z in range(m):
                    cur[z] = out[z]
            if stop:
                _mat_apply(S_R, 0 if hi == split else 1, cur, out)
            big = 0.0
            for z in range(m):
                v = abs(cur[z])
                if v > big:
                    big = v
            if big == 0.0 or not np.isfinite(big):
                total = -np.inf if big == 0.0 else np.nan
                sg = 0.0 if big == 0.0 else np.nan
                break
            total += np.log(big)
            for z in range(m):
                eta[i, z] = cur[z] / big
            if parent[a + i] == -1:
                v = 0.0
                for z in range(m):
                    v += c1[z] * eta[i, z]
                if v == 0.0:
                    total = -np.inf
                    sg = 0.0
                    break
                if v < 0.0:
                    sg = -sg
                total += np.log(abs(v))
        logabs[s] = total
        sign[s] = sg
    return logabs, sign, status


@njit(cache=True, nogil=True, fastmath=True)
def _mat_apply(M, r, cur, out):
    """``cur <- M[r] @ cur`` (``out``: scratch; ``M``: the fragment operators of the words, or
    the ``(2, m, m)`` STOP operators)."""
    m = cur.shape[0]
    for z in range(m):
        acc = 0.0
        for b in range(m):
            acc += M[r, z, b] * cur[b]
        out[z] = acc
    for z in range(m):
        cur[z] = out[z]


def fragment_log_prob(offsets, parent, words, leaf, M_L, M_R, c1, S_L=None, S_R=None,
                      groups=None):
    """Depth-1 fragments of many trees (see :func:`_fragment_log_prob`); ``S_L`` / ``S_R``:
    the STOP operators of the model with valency (applied to the fragment's head only: its
    children are leaves whose valency their own fragments score), or None.  ``groups``: runs
    of trees over the same words, as in :func:`tree_log_prob` (each fragment of a run
    computed once, :func:`_fragment_log_prob_lists`; the same results up to the order of a
    sum)."""
    S_L, S_R = _stop_pair(S_L), _stop_pair(S_R)
    groups = _check_groups(groups, offsets.shape[0] - 1)
    if groups is None:
        return _fragment_log_prob(offsets, parent, words, leaf, M_L, M_R, c1, S_L, S_R)
    return _fragment_log_prob_lists(offsets, parent, words, leaf, M_L, M_R, c1, S_L, S_R,
                                    groups, _chunks(groups))


@njit(cache=True, parallel=True)
def _fragment_log_prob_lists(offsets, parent, words, leaf, M_L, M_R, c1, S_L, S_R, groups,
                             n_chunks):
    """:func:`_fragment_log_prob` over runs of trees of the same words, ``prange`` across
    runs: the fragment of a node is a chain of states (its start, then a child position or a
    STOP per step, as in :func:`_tree_log_prob_lists`) ending in ``c_1 . cur``, each state and
    each fragment's value computed once per run."""
    ns = offsets.shape[0] - 1
    m = c1.shape[0]
    stop = S_L.shape[0] > 0
    logabs = np.empty(ns, np.float64)
    negs = np.empty(ns, np.float64)
    status = np.zeros(ns, np.int64)
    ng = groups.shape[0] - 1
    for c in prange(n_chunks):              # runs g0..g1, their scratch allocated once
        g0 = ng * c // n_chunks
        g1 = ng * (c + 1) // n_chunks
        n_all, cap_all, size_all = _chunk_sizes(offsets, groups, g0, g1, 3)
        keys = np.empty(size_all, np.int64)
        vals = np.empty(size_all, np.int64)
        vec = np.empty((cap_all, m), np.float64)
        first = np.empty(n_all, np.int64)
        nxt = np.empty((2, cap_all), np.int64)
        value = np.empty(cap_all, np.float64)   # c_1 . vec of a finished fragment (once)
        out = np.empty(m, np.float64)
        for g in range(g0, g1):
            t0 = groups[g]
            t1 = groups[g + 1]
            if t1 == t0:
                continue
            n_max, cap, size = _run_sizes(offsets, groups, g, 3)
            kg = keys[:size]
            kg[:] = -1
            first[:n_max] = -1
            nxt[:, :cap] = -1
            value[:cap] = np.nan
            n_states = 0
            for s in range(t0, t1):
                a, n, order, start, child = _open_tree(offsets, parent, s, status, logabs, negs)
                if status[s] != STATUS_OK:
                    continue
                total = 0.0
                neg = 0.0
                for i in range(n):
                    lo = start[i]
                    hi = start[i + 1]
                    split = lo
                    while split < hi and child[split] < i:
                        split += 1
                    st = first[i]
                    if st < 0:
                        st = first[i] = n_states
                        n_states += 1
                        for z in range(m):
                            vec[st, z] = leaf[words[a + i], z]
                    for q in range(split - 1, lo - 1, -1):          # left children, nearest first
                        st = _fragment_step(kg, vals, nxt, vec, st, 2 + child[q], M_L,
                                            words[a + child[q]], out, n_states)
                        if st == n_states:
                            n_states += 1
                    if stop:
                        st = _fragment_step(kg, vals, nxt, vec, st, 0, S_L,
                                            0 if split == lo else 1, out, n_states)
                        if st == n_states:
                            n_states += 1
                    for q in range(split, hi):                      # right children, nearest first
                        st = _fragment_step(kg, vals, nxt, vec, st, 2 + child[q], M_R,
                                            words[a + child[q]], out, n_states)
                        if st == n_states:
                            n_states += 1
                    if stop:
                        st = _fragment_step(kg, vals, nxt, vec, st, 1, S_R,
                                            0 if hi == split else 1, out, n_states)
                        if st == n_states:
                            n_states += 1
                    v = value[st]
                    if np.isnan(v):
                        v = 0.0
                        for z in range(m):
                            v += c1[z] * vec[st, z]
                        value[st] = v
                    if v == 0.0 or not np.isfinite(v):
                        total = -np.inf
                        break
                    if v < 0.0:
                        neg += 1.0
                    total += np.log(abs(v))
                logabs[s] = total
                negs[s] = neg
    return logabs, negs, status


@njit(cache=True, nogil=True, inline="always")
def _fragment_step(keys, vals, nxt, vec, st, code, M, r, out, new_id):
    """The fragment state after ``M[r]`` on state ``st``: ``code`` 0 / 1 the left / right
    STOP (found in ``nxt``), ``2 + c`` the child at position ``c`` (in the table)."""
    if code < 2:
        got = nxt[code, st]
        if got >= 0:
            return got
        nxt[code, st] = new_id
    else:
        got = _intern(keys, vals, (st + 1) * np.int64(4294967296) + code, new_id)
        if got >= 0:
            return got
    m = vec.shape[1]
    for z in range(m):
        vec[new_id, z] = vec[st, z]
    _mat_apply(M, r, vec[new_id], out)
    return new_id


@njit(cache=True, parallel=True)
def _fragment_log_prob(offsets, parent, words, leaf, M_L, M_R, c1, S_L, S_R):
    """Depth-1 fragments of many trees: ``(sum log|p_i|, negatives, status)`` per tree.

    The fragment of node ``i`` is ``i`` with its children as leaves, scored as a tree rooted at
    ``i`` by the recursion of :func:`tree_log_prob`:
    ``p_i = c_1 . prod_children E_d(leaf(x_c)) leaf(x_i)`` (nearest child first); a leaf's
    fragment is ``c_1 . leaf(x_i)``.  Each product has at most ``1 + children`` factors, so the
    estimation error does not compound along the tree as in ``p-hat(tree)``.  A child's
    operator depends on its word only: ``M_L[r] = E_L(leaf[r])``, ``M_R[r] = E_R(leaf[r])``
    (``(V, m, m)``, computed once per row by the caller), so a fragment costs ``O(m^2)`` per
    child.  Returns the sum of ``log |p_i|`` over the nodes (``-inf`` when some ``p_i == 0``),
    the number of negative ``p_i`` and the status of :func:`check_trees`.
    """
    ns = offsets.shape[0] - 1
    m = c1.shape[0]
    stop = S_L.shape[0] > 0
    logabs = np.empty(ns, np.float64)
    negs = np.empty(ns, np.float64)
    status = np.zeros(ns, np.int64)
    for s in prange(ns):
        a, n, order, start, child = _open_tree(offsets, parent, s, status, logabs, negs)
        if status[s] != STATUS_OK:
            continue
        cur = np.empty(m, np.float64)
        out = np.empty(m, np.float64)
        total = 0.0
        neg = 0.0
        for i in range(n):
            lo, split, hi = _start_node(leaf, words[a + i], start, child, i, cur)
            for q in range(split - 1, lo - 1, -1):          # left children, nearest first
                _mat_apply(M_L, words[a + child[q]], cur, out)
            if stop:
                _mat_apply(S_L, 0 if split == lo else 1, cur, out)
            for q in range(split, hi):                      # right children, nearest first
                _mat_apply(M_R, words[a + child[q]], cur, out)
            if stop:
                _mat_apply(S_R, 0 if hi == split else 1, cur, out)
            v = 0.0
            for z in range(m):
                v += c1[z] * cur[z]
            if v == 0.0 or not np.isfinite(v):
                total = -np.inf
                break
            if v < 0.0:
                neg += 1.0
            total += np.log(abs(v))
        logabs[s] = total
        negs[s] = neg
    return logabs, negs, status
