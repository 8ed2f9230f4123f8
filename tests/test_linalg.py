"""Tests of the matrix-decomposition primitives (fastspectral.linalg)."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

from fastspectral.linalg import (cca_projection, fast_anchor_words, frank_wolfe_gram,
                                 frank_wolfe_simplex, joint_em, mdp1, mdp2, mixture_weights_em,
                                 randomized_svd, simplex_objective, whiten)


def _slsqp(V, v):
    m = V.shape[0]
    res = minimize(lambda x: np.sum((x @ V - v) ** 2), np.full(m, 1.0 / m),
                   jac=lambda x: 2 * V @ (x @ V - v), method="SLSQP", bounds=[(0, 1)] * m,
                   constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1,
                                 "jac": lambda x: np.ones(m)}],
                   options={"ftol": 1e-15, "maxiter": 1000})
    x = np.clip(res.x, 0, None)
    x /= x.sum()
    return x, np.sum((x @ V - v) ** 2)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["corrective", "away"])
@pytest.mark.parametrize("m,d,seed", [(3, 5, 0), (7, 12, 1), (12, 8, 2), (20, 30, 3)])
def test_frank_wolfe_matches_qp_reference(m, d, seed, variant):
    rng = np.random.default_rng(seed)
    V = rng.standard_normal((m, d))
    # targets: outside the hull, inside it, and at a vertex
    T = np.vstack([rng.standard_normal((6, d)) * 2,
                   rng.dirichlet(np.ones(m), size=3) @ V,
                   V[:1]])
    tol = 1e-10
    gamma, gaps = frank_wolfe_simplex(V, T, tol=tol, max_iter=20000, variant=variant)
    assert np.all(gaps <= tol)
    assert np.allclose(gamma.sum(axis=1), 1.0) and np.all(gamma >= 0)
    obj = simplex_objective(V, T, gamma)
    for f in range(len(T)):
        _, ref = _slsqp(V, T[f])
        assert obj[f] <= ref + 1e-6, (f, obj[f], ref)
        assert obj[f] >= ref - 1e-6 - 1e-9 * abs(ref)  # SLSQP itself is ~exact here
    # a point inside the hull has objective 0; the vertex target gets gamma = e_0
    assert np.all(obj[6:] < 1e-8)
    assert gamma[-1, 0] > 1 - 1e-6


def test_frank_wolfe_gap_bounds_suboptimality_and_plain_variant():
    rng = np.random.default_rng(5)
    V = rng.standard_normal((6, 9))
    T = rng.standard_normal((40, 9))
    g_ref, gaps_ref = frank_wolfe_simplex(V, T, tol=1e-12, max_iter=50000)
    f_star = simplex_objective(V, T, g_ref)
    # classical Frank-Wolfe, few iterations: gap is an upper bound on f - f*
    g, gaps, it = frank_wolfe_simplex(V, T, tol=0.0, max_iter=30, variant="plain",
                                      return_iterations=True)
    assert np.all(it <= 30) and np.any(it == 30)
    f = simplex_objective(V, T, g)
    assert np.all(f - f_star <= gaps + 1e-9)
    assert np.all(f - f_star >= -1e-9)
    # with many iterations plain FW reaches a 1e-4 gap too
    g2, gaps2 = frank_wolfe_simplex(V, T, tol=1e-4, max_iter=200000, variant="plain")
    assert np.all(gaps2 <= 1e-4)
    assert np.all(simplex_objective(V, T, g2) - f_star <= 1e-4 + 1e-9)


def test_frank_wolfe_ill_conditioned_and_relative_rule():
    # nearly affinely dependent vertices: corrective FW still converges to a tiny gap
    rng = np.random.default_rng(12)
    base = rng.standard_normal((4, 10))
    V = np.vstack([base, rng.dirichlet(np.ones(4), size=12) @ base
                   + 1e-4 * rng.standard_normal((12, 10))])
    T = rng.dirichlet(np.ones(16), size=50) @ V + 1e-3 * rng.standard_normal((50, 10))
    g, gaps, it = frank_wolfe_simplex(V, T, tol=1e-11, max_iter=500, return_iterations=True)
    assert np.all(gaps <= 1e-11) and it.max() < 100
    f = simplex_objective(V, T, g)
    ga, _ = frank_wolfe_simplex(V, T, tol=1e-11, max_iter=500, variant="away")
    assert np.all(f <= simplex_objective(V, T, ga) + 1e-11)
    # ... where away-step FW is still far from converged after 2000 steps
    _, gaps_a = frank_wolfe_simplex(V, T, tol=0.0, max_iter=2000, variant="away")
    assert np.median(gaps_a) > 1e-9
    # relative rule on a well-conditioned problem: f(gamma) <= f* / (1 - rtol)
    V = rng.standard_normal((6, 9))
    T = rng.standard_normal((40, 9)) * 3
    f = simplex_objective(V, T, frank_wolfe_simplex(V, T, tol=1e-13)[0])
    for variant in ("away", "plain"):
        gr, gaps_r, itr = frank_wolfe_simplex(V, T, tol=0.0, rtol=1e-3, variant=variant,
                                              max_iter=10**5, return_iterations=True)
        assert np.all(itr < 10**5)
        fr = simplex_objective(V, T, gr)
        assert np.all(fr * (1 - 1e-3) <= f + 1e-12)
        assert np.all(gaps_r <= 1e-3 * fr * (1 + 1e-6) + 1e-12)
    with pytest.raises(ValueError):
        frank_wolfe_simplex(V, T, variant="nope")


def test_frank_wolfe_gram_and_input_checks():
    rng = np.random.default_rng(9)
    V = rng.standard_normal((4, 6))
    T = rng.standard_normal((5, 6))
    g1, _ = frank_wolfe_simplex(V, T)
    g2, gaps, it = frank_wolfe_gram(V @ V.T, T @ V.T)
    assert np.allclose(g1, g2)
    gs, _ = frank_wolfe_simplex(V, sp.csr_matrix(T))
    assert np.allclose(g1, gs)
    with pytest.raises(ValueError):
        frank_wolfe_simplex(V, rng.standard_normal((3, 5)))
    with pytest.raises(ValueError):
        frank_wolfe_gram(np.eye(3), np.ones((2, 4)))


def _planted_hull(n, m, d, noise, seed):
    rng = np.random.default_rng(seed)
    verts = rng.standard_normal((m, d)) * 3
    W = rng.dirichlet(np.full(m, 0.6), size=n)
    X = np.vstack([W @ verts, verts])
    X += rng.normal(scale=noise, size=X.shape)
    perm = rng.permutation(len(X))
    X = X[perm]
    planted = np.flatnonzero(perm >= n)
    return X, planted


@pytest.mark.parametrize("mode", ["affine", "linear"])
def test_fast_anchor_words_finds_planted_vertices(mode):
    X, planted = _planted_hull(3000, 10, 25, 0.01, 11)
    a = fast_anchor_words(X, 10, mode=mode)
    assert sorted(a.tolist()) == sorted(planted.tolist())
    a_sp = fast_anchor_words(sp.csr_matrix(X), 10, mode=mode)
    assert sorted(a_sp.tolist()) == sorted(planted.tolist())


def test_fast_anchor_words_projection_and_candidates():
    X, planted = _planted_hull(2000, 6, 200, 0.01, 3)
    a = fast_anchor_words(X, 6, project_dim=20, random_state=1)
    assert sorted(a.tolist()) == sorted(planted.tolist())
    # forbid one planted vertex: it must not be returned
    mask = np.ones(len(X), dtype=bool)
    mask[planted[0]] = False
    b = fast_anchor_words(X, 6, candidates=mask)
    assert planted[0] not in b and len(set(b.tolist())) == 6
    with pytest.raises(ValueError):
        fast_anchor_words(X, 3, candidates=[0, 1])


@pytest.mark.slow
def test_cca_projection_scaling_and_svd_methods():
    rng = np.random.default_rng(4)
    # exactly rank 8 (distinct singular values), with rows and columns of zero mass
    A = rng.dirichlet(np.full(300, 0.3), size=8).T
    B = rng.dirichlet(np.full(200, 0.3), size=8).T
    A[:5] = 0.0
    B[-3:] = 0.0
    Q = sp.csr_matrix(np.round(A @ np.diag(rng.uniform(1, 3, 8)) @ B.T * 1e6))
    phi_d, info = cca_projection(Q, 8, method="dense", return_details=True)
    phi_r = cca_projection(Q, 8, method="randomized", n_iter=8)
    phi_a = cca_projection(Q, 8, method="arpack")
    scale = np.abs(phi_d).max()
    for phi in (phi_r, phi_a):  # same vectors (sign convention makes them reproducible)
        assert np.allclose(phi, phi_d, atol=1e-6 * scale)
    p_g = info["p_g"]
    # whitened: E_{p(g)}[phi phi^T] = I ; the first coordinate is the trivial constant
    assert np.allclose((phi_d * p_g[:, None]).T @ phi_d, np.eye(8), atol=1e-8)
    live = p_g > 0
    assert np.allclose(np.abs(phi_d[live, 0]), 1.0) and np.all(phi_d[~live] == 0)
    # v_f = E[phi | f] = U sigma / sqrt(p(f))
    rs = np.asarray(Q.sum(axis=1)).ravel()
    ok = rs > 0
    v = np.asarray(Q @ phi_d)[ok] / rs[ok, None]
    assert np.allclose(v, (info["U"] * info["sigma"])[ok] / np.sqrt(info["p_f"][ok])[:, None],
                       atol=1e-8)
    # randomized SVD on sampled (noisy, sparse) counts of a rank-10 model: top singular values
    P = rng.dirichlet(np.full(400, 0.2), size=10).T @ rng.dirichlet(np.full(300, 0.2), size=10)
    R = sp.csr_matrix(rng.poisson(P * 3e4 / 10).astype(float))
    Om, _, _ = whiten(R)
    U, s, Vt = randomized_svd(Om, 5, n_iter=15)
    assert np.allclose(s, np.linalg.svd(Om.toarray(), compute_uv=False)[:5], rtol=1e-4)


def _planted_model(nf, ng, m, seed, anchor_mass=0.04):
    rng = np.random.default_rng(seed)
    pi = rng.dirichlet(np.full(m, 5.0))

    def cond(n):
        M = rng.dirichlet(np.full(n, 0.3), size=m).T
        M[:m] = 0.0
        M[np.arange(m), np.arange(m)] = anchor_mass  # row h is an anchor of state h
        return M / M.sum(axis=0)

    return pi, cond(nf), cond(ng)


def _match(est, true):
    """Column permutation of est that best matches true (by anchors = argmax)."""
    from scipy.optimize import linear_sum_assignment

    cost = np.array([[np.abs(est[:, i] - true[:, j]).sum() for j in range(true.shape[1])]
                     for i in range(est.shape[1])])
    ri, ci = linear_sum_assignment(cost)
    perm = np.empty(true.shape[1], dtype=int)
    perm[ci] = ri
    return perm


def test_mdp2_recovers_planted_model():
    m = 6
    pi, r, s = _planted_model(250, 200, m, 7)
    P = (r * pi) @ s.T
    res = mdp2(sp.csr_matrix(P * 1e5), m, svd_method="randomized", svd_iterations=10)
    assert sorted(res.anchors.tolist()) == list(range(m))
    perm = _match(res.r, r)
    assert np.abs(res.r[:, perm] - r).max() < 1e-5
    assert np.abs(res.pi[perm] - pi).max() < 1e-5
    assert np.allclose(res.gamma.sum(axis=1), 1.0)
    assert np.all(res.gaps <= 1e-8)
    # gamma = p(h | f)
    post = r * pi / (r @ pi)[:, None]
    assert np.abs(res.gamma[:, perm] - post).max() < 1e-4


def test_mdp1_recovers_transition():
    m = 4
    rng = np.random.default_rng(2)
    pi, r, s = _planted_model(120, 100, m, 3, anchor_mass=0.08)
    t = rng.dirichlet(np.full(m, 0.7), size=m)
    P = (r * pi) @ t @ s.T
    res = mdp1(sp.csr_matrix(P), m, em_iterations=5000, em_tol=1e-14, svd_method="dense")
    pr = _match(res.r, r)
    ps = _match(res.s, s)
    assert np.abs(res.r[:, pr] - r).max() < 1e-4
    assert np.abs(res.s[:, ps] - s).max() < 1e-4
    t_est = res.t[np.ix_(pr, ps)]
    assert np.abs(t_est - t).max() < 0.02
    assert np.abs(res.pi[pr] - pi).max() < 1e-3
    assert np.all(np.diff(res.loglik) >= -1e-12)  # EM is monotone


def test_joint_em_permutation_and_mixture_em():
    rng = np.random.default_rng(8)
    m = 3
    R = rng.dirichlet(np.ones(40), size=m).T
    S = rng.dirichlet(np.ones(30), size=m).T
    perm = np.array([2, 0, 1])
    J_true = np.zeros((m, m))
    J_true[np.arange(m), perm] = [0.5, 0.3, 0.2]
    P = R @ J_true @ S.T
    J, trace = joint_em(sp.csr_matrix(P), R, S, max_iter=3000, tol=1e-15)
    assert np.abs(J - J_true).max() < 0.02
    assert np.all(np.diff(trace) >= -1e-12)
    # mixture weights: rows of exact mixtures are recovered; EM never decreases likelihood
    W_true = rng.dirichlet(np.ones(m), size=50)
    C = W_true @ S.T * 1000
    W, ll, it = mixture_weights_em(sp.csr_matrix(C), S, max_iter=5000, tol=1e-14,
                                   return_loglik=True)
    assert np.abs(W - W_true).max() < 0.02
    W1, ll1, _ = mixture_weights_em(C, S, max_iter=1, return_loglik=True)
    W2, ll2, _ = mixture_weights_em(C, S, max_iter=2, return_loglik=True)
    assert np.all(ll2 >= ll1 - 1e-9) and np.all(ll >= ll2 - 1e-9)
    with pytest.raises(ValueError):
        mixture_weights_em(C, S[:-1])


# ------------------------------------------------------------------ linalg.svd

def _low_rank(d1, d2, rank, seed, sparse):
    # exactly rank ``rank`` with a decaying spectrum; sparse: sparse factors (a sparse product)
    rng = np.random.default_rng(seed)
    L = rng.standard_normal((d1, rank)) * np.geomspace(1.0, 1e-3, rank)
    R = rng.standard_normal((rank, d2))
    if sparse:
        L = sp.csr_matrix(np.where(rng.random(L.shape) < 0.2, L, 0.0))
        R = sp.csr_matrix(np.where(rng.random(R.shape) < 0.2, R, 0.0))
        return sp.csr_matrix(L @ R)
    return L @ R


@pytest.mark.slow
@pytest.mark.parametrize("d1,d2", [(40, 60), (1200, 150), (150, 1200), (700, 800)])
@pytest.mark.parametrize("sparse", [False, True])
def test_truncated_svd_every_branch_matches_lapack(d1, d2, sparse):
    """Dense LAPACK (small), Gram eigen-decomposition (thin) and range finder (large): the
    leading singular triplets of a fast-decaying spectrum agree with a full LAPACK SVD."""
    from fastspectral.linalg import truncated_svd

    A = _low_rank(d1, d2, 12, 0, sparse)
    D = A.toarray() if sparse else A
    U, s, Vt = truncated_svd(A, 6)
    s_ref = np.linalg.svd(D, compute_uv=False)
    assert U.shape == (d1, 6) and s.shape == (6,) and Vt.shape == (6, d2)
    assert np.allclose(s, s_ref[:6], rtol=1e-8)
    assert np.allclose(U.T @ U, np.eye(6), atol=1e-8)
    assert np.allclose((U * s) @ Vt, U @ (U.T @ D), atol=1e-8 * s[0])
    # k is clipped to the matrix
    assert truncated_svd(A, 10 ** 6)[1].shape == (min(d1, d2),)


def test_randomized_svd_seeded_and_checked():
    from fastspectral.linalg.svd import randomized_svd, range_finder

    A = _low_rank(500, 400, 10, 1, True)
    a = randomized_svd(A, 4, random_state=3)
    b = randomized_svd(A, 4, random_state=3)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert np.allclose(a[1], np.linalg.svd(A.toarray(), compute_uv=False)[:4], rtol=1e-8)
    Q = range_finder(A, A.T, 12, 2, np.random.default_rng(0))
    assert np.allclose(Q.T @ Q, np.eye(12), atol=1e-12)
    with pytest.raises(ValueError, match="k must be"):
        randomized_svd(A, 0)


def test_compiled_svd_kit():
    """small_svd (exact, any shape) and range_svd (randomized on a block) from linalg.svd."""
    from fastspectral.linalg.svd import range_svd, small_svd, sym_eig

    rng = np.random.default_rng(4)
    for shape in [(1, 7), (7, 1), (5, 9), (9, 5)]:
        Q = rng.standard_normal(shape)
        U, s, Vt = small_svd(Q, 1e-12)
        assert np.allclose((U * s) @ Vt, Q, atol=1e-12)
        assert np.allclose(s, np.linalg.svd(Q, compute_uv=False)[:len(s)], rtol=1e-12)
    Q = _low_rank(60, 50, 5, 2, False)
    Om = rng.standard_normal((50, 5))
    U, s, Vt = range_svd(Q, Om, 5, 2, 1e-12)
    assert np.allclose(s, np.linalg.svd(Q, compute_uv=False)[:5], rtol=1e-9)
    assert np.allclose(U.T @ Q, s[:, None] * Vt, atol=1e-9)
    S = rng.standard_normal((6, 6))
    w, V = sym_eig(S + S.T)
    assert np.allclose(w, np.linalg.eigvalsh(S + S.T)) and np.allclose(V @ np.diag(w) @ V.T, S + S.T)


def test_ridge_inverse_is_the_regularised_pseudo_inverse():
    """s / (s^2 + ridge^2 / n) where kept, 0 elsewhere; ridge 0: 1 / s; the HMM learner's
    projections use it (X = V diag(inv): U^T P X = diag(s * inv))."""
    from fastspectral.linalg.ridge import ridge_inverse

    s = np.array([4.0, 2.0, 0.5, 1e-9])
    keep = np.array([True, True, True, False])
    np.testing.assert_array_equal(ridge_inverse(s, keep, 2.0, 16), [4 / 16.25, 2 / 4.25,
                                                                    0.5 / 0.5, 0.0])
    np.testing.assert_allclose(ridge_inverse(s, keep, 0.0, 7)[:3], 1.0 / s[:3])
    assert ridge_inverse(s, np.zeros(6, np.bool_), 1.0, 1).shape == (6,)   # len(keep) entries
    from fastspectral.hmm import spectral as S

    rng = np.random.default_rng(0)
    P = sp.csr_matrix(rng.random((30, 20)) * (rng.random((30, 20)) < 0.4))
    U, X, sv = S._projections(P, 5, 3.0, 1e-10, 50, 0)
    np.testing.assert_allclose(U.T @ P @ X, np.diag(sv * sv / (sv * sv + 9.0 / 50)),
                               atol=1e-12)


def test_csr_randomized_svd_matches_randomized_svd():
    """The compiled SVD over CSR arrays gives randomized_svd's triplets (same test matrix,
    same products and orthonormalisations, up to the signs of the columns)."""
    from fastspectral.linalg.svd import csr_randomized_svd

    rng = np.random.default_rng(1)
    A = sp.csr_matrix(rng.random((120, 90)) * (rng.random((120, 90)) < 0.3))
    U, s, Vt = csr_randomized_svd((A.data, A.indices, A.indptr), A.shape, 6, oversample=10,
                                  n_iter=2, random_state=3)
    U0, s0, Vt0 = randomized_svd(A, 6, oversample=10, n_iter=2, random_state=3)
    np.testing.assert_allclose(s, s0, rtol=1e-9)
    np.testing.assert_allclose(np.abs(np.sum(U * U0, axis=0)), 1.0, atol=1e-8)
    np.testing.assert_allclose(np.abs(np.sum(Vt * Vt0, axis=1)), 1.0, atol=1e-8)
