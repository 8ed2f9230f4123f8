"""A known latent-variable dependency model: the oracle of the spectral learner's tests.

The model of Dhillon et al. (2012), section 2: the structure ``y`` of a tree is given; every
word ``x_i`` has a hidden state ``h_i`` in ``0..m-1``; a root's state is drawn from ``pi``, a
left (right) child's state from its head's by ``T_L`` (``T_R``), ``T_d[h', h] = p(h' | h)``,
and each word from its state by ``O[x, h] = p(x | h)``::

    p(x | y) = sum_h  prod_{roots r} pi[h_r]  prod_{arcs (i -> j, d)} T_d[h_j, h_i]
               prod_i O[x_i, h_i]

Tree shapes are drawn independently of the states (each node gets a random number of left and
right children, fewer with depth), so ``p(x | y)`` is exactly what the spectral model estimates.
:meth:`LatentDependencyGenerator.log_prob` evaluates it with the compiled recursion (in the
hidden-state basis); :meth:`brute_force_prob` sums over every state assignment (tiny trees).
:meth:`population_operators` builds the exact observable operators of section 3.3 for a given
word representation, so the tests can check the spectral recursion without sampling noise.
"""
from __future__ import annotations

import itertools

import numpy as np

__all__ = ["LatentDependencyGenerator"]


class LatentDependencyGenerator:
    """A random latent dependency model with ``n_states`` states over ``n_words`` words.

    Parameters
    ----------
    n_states : int
    n_words : int
    seed : int
    concentration : float
        Dirichlet parameter of the random transition and emission columns (small: peaked,
        well-separated states).

    Examples
    --------
    >>> g = LatentDependencyGenerator(n_states=2, n_words=6, seed=0)
    >>> sents = g.sample(3, seed=1)
    >>> len(sents), g.log_prob(sents).shape
    (3, (3,))
    """

    def __init__(self, n_states=3, n_words=10, seed=0, concentration=0.3,
                 child_rate=(0.9, 0.5, 0.25), max_nodes=14):
        rng = np.random.default_rng(seed)
        m, V = int(n_states), int(n_words)
        self.n_states, self.n_words = m, V
        self.pi = rng.dirichlet(np.ones(m))
        self.T_L = rng.dirichlet(np.full(m, concentration), size=m).T     # T[h', h]
        self.T_R = rng.dirichlet(np.full(m, concentration), size=m).T
        O = rng.dirichlet(np.full(V, concentration), size=m).T             # O[x, h]
        self.O = O
        self.words = [f"w{i}" for i in range(V)]
        self.child_rate = tuple(float(r) for r in child_rate)
        self.max_nodes = int(max_nodes)

    # ------------------------------------------------------------------------------------------
    def _shape(self, rng):
        """A random projective tree shape: ``(heads 1-based, 0 = root)`` in sentence order."""
        rates = self.child_rate

        def grow(depth, budget):
            rate = rates[min(depth, len(rates) - 1)]
            nl = min(rng.poisson(rate), budget[0])
            budget[0] -= nl
            nr = min(rng.poisson(rate), budget[0])
            budget[0] -= nr
            left = [grow(depth + 1, budget) for _ in range(nl)]
            right = [grow(depth + 1, budget) for _ in range(nr)]
            return left, right

        root = grow(0, [self.max_nodes - 1])
        heads: list[int] = []

        def emit(node, head):          # in-order: left subtrees, node, right subtrees
            left, right = node
            pos = []
            for c in left:
                pos.append(emit_child(c))
            me = len(heads)
            heads.append(head)
            for c in right:
                pos.append(emit_child(c))
            for p in pos:
                heads[p] = me + 1
            return me

        def emit_child(node):
            return emit(node, -1)

        emit(root, 0)
        return np.asarray(heads, np.int64)

    def sample(self, n: int, seed=0) -> list:
        """``n`` sentences (:class:`~fastspectral.trees.conll.DepSentence`) of the model."""
        from ..trees.conll import DepSentence

        rng = np.random.default_rng(seed)
        m, V = self.n_states, self.n_words
        cT = {"L": np.cumsum(self.T_L, axis=0), "R": np.cumsum(self.T_R, axis=0)}
        cO = np.cumsum(self.O, axis=0)
        out = []
        for _ in range(int(n)):
            heads = self._shape(rng)
            k = len(heads)
            states = np.full(k, -1, np.int64)
            # parents first: walk from the root
            kids = [[] for _ in range(k)]
            root = -1
            for i, h in enumerate(heads):
                if h == 0:
                    root = i
                else:
                    kids[h - 1].append(i)
            states[root] = min(int(np.searchsorted(np.cumsum(self.pi), rng.random())), m - 1)
            stack = [root]
            while stack:
                v = stack.pop()
                for c in kids[v]:
                    col = cT["L" if c < v else "R"][:, states[v]]
                    states[c] = min(int(np.searchsorted(col, rng.random())), m - 1)
                    stack.append(c)
            ws = [min(int(np.searchsorted(cO[:, s], rng.random())), V - 1) for s in states]
            out.append(DepSentence(words=[self.words[w] for w in ws], heads=heads.tolist(),
                                   upos=["X"] * k, xpos=["X"] * k))
        return out

    # ------------------------------------------------------------------------------------------
    def _hidden_basis(self, emission):
        m = self.n_states
        eye = np.eye(m)
        E_L = np.einsum("ab,ja->abj", eye, self.T_L)     # E[a, b, j] = delta_ab T[j, a]
        E_R = np.einsum("ab,ja->abj", eye, self.T_R)
        return (np.ascontiguousarray(emission, np.float64), np.ascontiguousarray(E_L),
                np.ascontiguousarray(E_R), self.pi.copy())

    def _word_ids(self, sentences):
        index = {w: i for i, w in enumerate(self.words)}
        return [np.asarray([index[w] for w in s.words], np.int64) for s in sentences]

    def log_prob(self, sentences, emission=None) -> np.ndarray:
        """``log p(x | y)`` of each sentence under the true model (the compiled recursion in
        the hidden-state basis).  ``emission`` (``V x m``) replaces ``O`` (e.g. the smoothed
        emission ``F M`` of a low-dimensional word representation)."""
        from .kernels import tree_log_prob

        leaf, E_L, E_R, c1 = self._hidden_basis(self.O if emission is None else emission)
        ids = self._word_ids(sentences)
        offsets = np.zeros(len(sentences) + 1, np.int64)
        offsets[1:] = np.cumsum([len(x) for x in ids])
        parent = np.concatenate([np.asarray(s.heads, np.int64) - 1 for s in sentences])
        logabs, sign, status = tree_log_prob(offsets, parent, np.concatenate(ids), leaf, E_L,
                                             E_R, c1)
        if (status != 0).any():
            raise ValueError("not a dependency tree")
        if emission is None or (sign > 0).all():
            return logabs
        raise ValueError("the emission gives non-positive tree probabilities")

    def brute_force_prob(self, sentence, emission=None) -> float:
        """``p(x | y)`` by summing over all ``m ** n`` state assignments (tiny trees only)."""
        O = self.O if emission is None else emission
        ids = self._word_ids([sentence])[0]
        heads = np.asarray(sentence.heads) - 1
        n = len(ids)
        total = 0.0
        for hs in itertools.product(range(self.n_states), repeat=n):
            p = 1.0
            for i in range(n):
                p *= O[ids[i], hs[i]]
                if heads[i] < 0:
                    p *= self.pi[hs[i]]
                else:
                    T = self.T_L if i < heads[i] else self.T_R
                    p *= T[hs[i], hs[heads[i]]]
            total += p
        return total

    def population_operators(self, features):
        """The exact observable parameters of section 3.3 for the word representation
        ``features`` (``V x k``, row ``x`` = the vector of word ``x``): ``(leaf, E_L, E_R, c_1,
        smoothed_emission)``.

        With ``M = E[phi(x) | h] = F^T O`` (``k x m``), ``M_d = M T_d``, ``U`` an orthonormal
        basis of ``range(M)`` and ``A = U^T M``:  ``leaf = F U``, ``c_1 = A pi``,
        ``E_d[:, :, j] = A^-T diag(M_d^T U e_j) A^T``.  The recursion with these gives
        ``p(x | y)`` with the emission ``O`` replaced by ``F M`` (the returned
        ``smoothed_emission``; equal to ``O`` for one-hot features).
        """
        F = np.asarray(features, np.float64)
        M = F.T @ self.O
        U, _, _ = np.linalg.svd(M, full_matrices=False)
        A = U.T @ M
        Ait = np.linalg.inv(A).T
        ops = []
        for T in (self.T_L, self.T_R):
            Md = M @ T
            G = Md.T @ U                     # G[:, j] = M_d^T U e_j
            E = np.einsum("ah,hj,hb->abj", Ait, G, A.T)
            ops.append(np.ascontiguousarray(E))
        return (np.ascontiguousarray(F @ U), ops[0], ops[1], A @ self.pi,
                np.ascontiguousarray(F @ M))
