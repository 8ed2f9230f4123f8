"""truncated_svd's Gram branch for dense-size matrices (fastspectral.linalg.svd._gram_top_svd):
taken for flat spectra and agreeing with LAPACK's SVD to rounding, refused (full SVD) when the
spectrum falls below s_k = 0.03 s_1, and equal on sparse and dense input."""
import numpy as np
import pytest
import scipy.sparse as sp

from fastspectral._blas import blas_single_thread
from fastspectral.linalg import svd as S


def _lapack(A):
    """numpy.linalg.svd as truncated_svd runs it (BLAS single-threaded: the same rounding)."""
    with blas_single_thread():
        return np.linalg.svd(A, full_matrices=False)


def _matrix(d1, d2, decay, seed, density=0.05):
    rng = np.random.default_rng(seed)
    r = min(d1, d2)
    U, _ = np.linalg.qr(rng.standard_normal((d1, r)))
    V, _ = np.linalg.qr(rng.standard_normal((d2, r)))
    A = (U * np.geomspace(1.0, decay, r)) @ V.T
    A[rng.random(A.shape) > density] = 0.0        # sparse-ish, like the moment matrices
    return A


def _check_against_lapack(A, U, s, Vt, k, rtol_s, atol_v):
    U0, s0, V0 = np.linalg.svd(A, full_matrices=False)
    np.testing.assert_allclose(s, s0[:k], rtol=rtol_s)
    sg = np.sign(np.sum(U * U0[:, :k], 0))          # singular vectors up to their signs
    np.testing.assert_allclose(U * sg, U0[:, :k], atol=atol_v)
    np.testing.assert_allclose(Vt * sg[:, None], V0[:k], atol=atol_v)


@pytest.mark.slow
@pytest.mark.parametrize("d1,d2", [(300, 420), (420, 300)])
def test_gram_branch_flat_spectrum(d1, d2):
    A = _matrix(d1, d2, 0.5, 0)
    k = 32
    got = S._gram_top_svd(sp.csr_matrix(A), k)
    assert got is not None                         # s_32 / s_1 well above 0.03
    U, s, Vt = got
    assert U.shape == (d1, k) and s.shape == (k,) and Vt.shape == (k, d2)
    assert np.all(np.diff(s) <= 0)
    _check_against_lapack(A, U, s, Vt, k, 1e-12, 1e-9)
    dense = S._gram_top_svd(A, k)                  # dense input: same decomposition
    for x, y in zip(got, dense):
        np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12)
    # truncated_svd takes this branch (BLAS single-threaded there: equal up to rounding)
    U2, s2, V2 = S.truncated_svd(sp.csr_matrix(A), k)
    np.testing.assert_allclose(s2, s, rtol=1e-14)
    np.testing.assert_allclose(U2, U, atol=1e-12)


def test_gram_branch_refuses_fast_decay():
    A = _matrix(300, 300, 1e-30, 1, density=1.0)    # s_32 / s_1 = 1e-3
    assert S._gram_top_svd(sp.csr_matrix(A), 32) is None
    U, s, Vt = S.truncated_svd(sp.csr_matrix(A), 32)        # the full SVD instead: exact
    U0, s0, V0 = _lapack(A)
    np.testing.assert_array_equal(s, s0[:32])
    np.testing.assert_array_equal(U, U0[:, :32])


@pytest.mark.slow
def test_small_or_many_components_use_lapack():
    A = _matrix(100, 140, 0.5, 2)                  # short side below 128
    U, s, Vt = S.truncated_svd(sp.csr_matrix(A), 8)
    U0, s0, V0 = _lapack(A)
    np.testing.assert_array_equal(U, U0[:, :8])
    B = _matrix(200, 210, 0.9, 3)                  # k above a quarter of the short side
    U, s, Vt = S.truncated_svd(sp.csr_matrix(B), 60)
    np.testing.assert_array_equal(s, _lapack(B)[1][:60])
