"""Exact-moment spectral estimation for a known L-PCFG (theorems 1 and 2 of Cohen et al. 2012).

Given the true model (:class:`fastspectral.synthetic.LatentPCFG`: binary rules, preterminals with
emissions, no unary rules), :func:`exact_spectral_grammar` computes the population moments for a
simple feature set whose conditional means are available in closed form, and runs the same
estimation algebra as the learner (SVD of ``Omega^a``, ``y = U^T phi``, ``z = S^-1 V^T psi``,
figure 4 of the paper) on them:

* inside features of a phrasal node: the rule at the node, the rule with its left child's rule,
  the rule with its right child's rule (a preterminal child's "rule" is its word); of a
  preterminal: its word;
* outside features: "root", (parent rule, side), (parent rule, side, sibling's rule).

With ``E[phi | a, h] = F_a[:, h]``, ``E[psi | a, h] = G_a[:, h]`` and ``p(h | a)`` proportional to the
expected number ``n(a, h)`` of nodes ``(a, h)`` per tree (``n = pi (I - M)^-1`` with ``M`` the mean
matrix of the branching process), ``Omega^a = F_a diag(p_a) G_a^T`` and, by the conditional
independence of inside and outside trees given ``(a, h)``::

    C^{a->b c} = sum_h p_a(h) Zt_a[:, h] (x) sum_{h2,h3} t(h, h2, h3) Yt_b[:, h2] (x) Yt_c[:, h3]
    c_inf_{p->x} = sum_h p_p(h) q(x | p, h) Zt_p[:, h]
    c1_a = sum_h pi(a, h) Yt_a[:, h]

with ``Yt_a = U^T F_a`` and ``Zt_a = S^-1 V^T G_a``.  When every ``Omega^a`` has rank ``m_a`` the
tensor algorithm then reproduces ``p(tree)`` and all marginals of the true model exactly.
"""
from __future__ import annotations

import numpy as np

from .estimate import choose_rank, truncated_svd
from .params import LatentGrammar

__all__ = ["true_grammar", "expected_node_counts", "exact_spectral_grammar"]


def true_grammar(model):
    """The true model as ``(LatentGrammar, emission)``; ``emission[(sym_id, word)]`` is ``q(x | p, .)``."""
    sid = {s: i for i, s in enumerate(model.symbols)}
    m = np.array([model.n_states[s] for s in model.symbols], dtype=np.int32)
    bp = [sid[a] for a, _, _ in model.rules]
    bl = [sid[b] for _, b, _ in model.rules]
    br = [sid[c] for _, _, c in model.rules]
    tensors = [model.binary_tensor(r) for r in range(len(model.rules))]
    roots = {sid[a]: np.asarray(v, dtype=np.float64) for a, v in model.root.items()}
    g = LatentGrammar(m, bp, bl, br, tensors, [], [], [], roots)
    emission = {}
    for p, words in model.lexicon.items():
        E = model.emission[p]
        for k, w in enumerate(words):
            emission[(sid[p], w)] = E[:, k].copy()
    return g, emission


def expected_node_counts(g: LatentGrammar):
    """``n[a]`` (length ``m_a``): expected number of nodes ``(a, h)`` per tree."""
    off = np.zeros(g.S + 1, dtype=np.int64)
    np.cumsum(g.m, out=off[1:])
    D = int(off[-1])
    M = np.zeros((D, D))
    for r in range(g.bin_parent.shape[0]):
        a, b, c = g.bin_parent[r], g.bin_left[r], g.bin_right[r]
        T = g.tensor(r)
        M[off[a]:off[a + 1], off[b]:off[b + 1]] += T.sum(2)
        M[off[a]:off[a + 1], off[c]:off[c + 1]] += T.sum(1)
    pi = np.zeros(D)
    for a in range(g.S):
        v = g.root(a)
        if v is not None:
            pi[off[a]:off[a + 1]] = v
    n = np.linalg.solve((np.eye(D) - M).T, pi)
    return [n[off[a]:off[a + 1]] for a in range(g.S)]


def exact_spectral_grammar(model, n_states=None, rank_tol: float = 1e-9):
    """Spectral parameters from exact moments of ``model`` (see the module docstring).

    Returns ``(grammar, c_inf, ranks)``: a :class:`LatentGrammar` over ``model.symbols`` with
    ``m_a = min(rank(Omega^a), n_states or m_true)``, the emission vectors
    ``c_inf[(sym_id, word)]`` and the ranks found per symbol.
    """
    g, emis = true_grammar(model)
    S = g.S
    sid = {s: i for i, s in enumerate(model.symbols)}
    pre = np.zeros(S, dtype=bool)
    for p in model.preterminals:
        pre[sid[p]] = True
    n = expected_node_counts(g)
    p_h = [n[a] / n[a].sum() if n[a].sum() > 0 else np.full(g.m[a], 1.0 / g.m[a]) for a in range(S)]
    rules_of = {a: [r for r in range(len(g.bin_parent)) if g.bin_parent[r] == a] for a in range(S)}
    words_of = {a: [w for (b, w) in emis if b == a] for a in range(S)}

    def child_rule_dist(b):
        """P(child's "rule" | b, h) as a (k, m_b) matrix and the list of its labels."""
        if pre[b]:
            ws = words_of[b]
            return np.stack([emis[(b, w)] for w in ws]), [("w", w) for w in ws]
        rs = rules_of[b]
        return np.stack([g.tensor(r).sum((1, 2)) for r in rs]), [("r", r) for r in rs]

    child = {b: child_rule_dist(b) for b in range(S)}
    # inside conditional means
    F = {}
    for a in range(S):
        if pre[a]:
            F[a] = child[a][0]
            continue
        rows = []
        for r in rules_of[a]:
            T = g.tensor(r)
            rows.append(T.sum((1, 2))[None, :])
            Pb, _ = child[g.bin_left[r]]
            rows.append(Pb @ T.sum(2).T)            # (k_b, m_a)
            Pc, _ = child[g.bin_right[r]]
            rows.append(Pc @ T.sum(1).T)
        F[a] = np.vstack(rows) if rows else np.zeros((0, g.m[a]))
    # outside conditional means (unnormalised: sums of n(parent) * t, divided by n(a, h) below)
    Gacc = {a: [] for a in range(S)}
    for a in range(S):
        v = g.root(a)
        Gacc[a].append(np.zeros(g.m[a]) if v is None else v.copy())
    for r in range(len(g.bin_parent)):
        a, b, c = g.bin_parent[r], g.bin_left[r], g.bin_right[r]
        T = g.tensor(r) * n[a][:, None, None]       # joint over (hp, h2, h3)
        Gacc[b].append(T.sum((0, 2)))
        Gacc[c].append(T.sum((0, 1)))
        Pc, _ = child[c]
        Gacc[b].extend(list(Pc @ T.sum(0).T))       # sibling c's rule: (k_c, m_b)
        Pb, _ = child[b]
        Gacc[c].extend(list(Pb @ T.sum(0)))         # sibling b's rule: (k_b, m_c)
    G = {}
    for a in range(S):
        denom = np.where(n[a] > 0, n[a], 1.0)
        G[a] = np.vstack(Gacc[a]) / denom[None, :]
    # SVD and projections
    Yt, Zt, m_new, ranks = {}, {}, np.ones(S, dtype=np.int32), {}
    for a in range(S):
        Om = F[a] @ np.diag(p_h[a]) @ G[a].T
        U, s, Vt = truncated_svd(Om, min(Om.shape))
        cap = int(g.m[a] if n_states is None else min(n_states, g.m[a]))
        k = choose_rank(s, cap, rank_tol)
        ranks[a] = int(np.count_nonzero(s > rank_tol * s[0])) if s.size and s[0] > 0 else 0
        m_new[a] = k
        Yt[a] = U[:, :k].T @ F[a]
        Zt[a] = (Vt[:k] / s[:k, None]) @ G[a]
    tensors = []
    for r in range(len(g.bin_parent)):
        a, b, c = g.bin_parent[r], g.bin_left[r], g.bin_right[r]
        tensors.append(np.einsum("xh,h,hij,yi,wj->xyw", Zt[a], p_h[a], g.tensor(r), Yt[b], Yt[c]))
    roots = {a: Yt[a] @ g.root(a) for a in range(S) if g.root(a) is not None}
    spec = LatentGrammar(m_new, g.bin_parent, g.bin_left, g.bin_right, tensors, [], [], [], roots)
    c_inf = {(p, w): Zt[p] @ (p_h[p] * q) for (p, w), q in emis.items()}
    return spec, c_inf, ranks
