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
* :func:`mdp2`, :func:`mdp1`, :func:`joint_em` — the matrix decomposition problems
  (:class:`MDP2Result`, :class:`MDP1Result`).
"""
from .anchors import fast_anchor_words
from .cca import cca_projection, conditional_means, whiten
from .mdp import MDP1Result, MDP2Result, joint_em, mdp1, mdp2
from .svd import randomized_svd, truncated_svd
from .simplex import frank_wolfe_gram, frank_wolfe_simplex, mixture_weights_em, simplex_objective

__all__ = ["frank_wolfe_simplex", "frank_wolfe_gram", "mixture_weights_em", "simplex_objective",
           "fast_anchor_words", "cca_projection", "conditional_means", "randomized_svd", "truncated_svd",
           "whiten",
           "mdp2", "mdp1", "joint_em", "MDP2Result", "MDP1Result"]
