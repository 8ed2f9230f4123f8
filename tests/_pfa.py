"""A known 2-state probabilistic automaton over the symbols 0, 1, 2 (shared by the SHAG tests)."""
import numpy as np


def two_state_pfa():
    """``(alpha, A, beta)``: ``A[a, i', i]`` (column convention), rows sum with ``beta`` to 1."""
    alpha = np.array([0.7, 0.3])
    beta = np.array([0.5, 0.2])
    A = np.zeros((3, 2, 2))
    A[0, 1, 0], A[1, 0, 0] = 0.35, 0.15          # from 0: 'a' -> 1, 'b' -> 0
    A[2, 0, 1], A[1, 1, 1], A[0, 0, 1] = 0.5, 0.2, 0.1   # from 1
    assert np.allclose(A.sum(axis=(0, 1)) + beta, 1)
    return alpha, A, beta


def pfa_prob(pfa, seq):
    """Probability of the symbol sequence ``seq``."""
    alpha, A, beta = pfa
    v = alpha
    for a in seq:
        v = A[a] @ v
    return float(beta @ v)


def sample_pfa(rng, pfa, n):
    """``n`` sequences sampled from ``pfa``."""
    alpha, A, beta = pfa
    N = A.shape[1]
    out = []
    for _ in range(n):
        i = rng.choice(N, p=alpha)
        seq = []
        while True:
            # outcomes: (a, i') pairs then STOP
            p = np.concatenate([A[:, :, i].ravel(), [beta[i]]])
            k = rng.choice(len(p), p=p)
            if k == len(p) - 1:
                break
            a, i = divmod(k, N)
            seq.append(a)
        out.append(seq)
    return out
