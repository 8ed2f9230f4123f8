"""Matrix-decomposition primitives for anchor (pivot) learning (Cohen & Collins 2014, sec. 5).

* :func:`frank_wolfe_simplex` / :func:`frank_wolfe_gram` — least squares over the probability
  simplex (Frank–Wolfe, exact line search, duality-gap stopping; Numba, parallel over rows).
* :func:`mixture_weights_em` — per-row maximum-likelihood mixture weights over fixed
  components (the concave EM of eqs. 1 / 3), Numba.
* :func:`fast_anchor_words` — greedy farthest-point anchors (Arora et al. 2013).
* :func:`cca_projection`, :func:`conditional_means` — CCA representation ``phi(g)`` of a
  co-occurrence matrix and ``E[phi(g) | f]``.
* :func:`randomized_svd`, :func:`truncated_svd` (:mod:`.svd`) — the package's SVDs (randomized
  range finder; exact for small matrices) and the compiled kit of :mod:`.svd`.
* :func:`ridge_inverse` (:mod:`.ridge`) — the spectral learners' ridge-regularised
  pseudo-inverse.
* :func:`mdp2`, :func:`mdp1`, :func:`joint_em` — the matrix decomposition problems
  (:class:`MDP2Result`, :class:`MDP1Result`).
"""
import importlib

_HOMES = {
    "fast_anchor_words": "anchors", "cca_projection": "cca", "conditional_means": "cca",
    "whiten": "cca", "MDP1Result": "mdp", "MDP2Result": "mdp", "joint_em": "mdp", "mdp1": "mdp",
    "mdp2": "mdp", "randomized_svd": "svd", "csr_randomized_svd": "svd",
    "ridge_inverse": "ridge", "truncated_svd": "svd", "frank_wolfe_gram": "simplex",
    "frank_wolfe_simplex": "simplex", "mixture_weights_em": "simplex",
    "simplex_objective": "simplex",
}


def __getattr__(name):  # lazy: importing one submodule does not compile the others' kernels
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'fastspectral.linalg' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


__all__ = sorted(_HOMES)
