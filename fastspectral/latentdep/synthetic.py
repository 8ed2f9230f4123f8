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

With ``stop=(lo, hi)`` the generator is instead the model **with valency** (STOP events, the
geometric valency of the DMV, Klein & Manning 2004, and of head automata): a node in state
``h`` draws its left (right) children one at a time, stopping with probability ``s_L[h]``
(``s_R[h]``, drawn uniformly in ``[lo, hi]``) before each draw, so tree shapes now depend on
the states, and what is scored is ``p(x, valency | y) = sum_h prod (...) prod_{i, d}
(1 - s_d[h_i]) ** n_d(i) * s_d[h_i]``: the quantity ``LatentDependencyModel(stop_events=True)``
estimates.  :meth:`population_moments` gives its exact moments (the estimator's inputs).
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
                 child_rate=(0.9, 0.5, 0.25), max_nodes=14, stop=None):
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
        self.stop = None
        self.s_L = self.s_R = None
        self.rejected = 0
        if stop is not None:
            lo, hi = (float(x) for x in stop)
            if not 0.0 < lo <= hi <= 1.0:
                raise ValueError(f"stop must be a range (lo, hi) in (0, 1], got {stop!r}")
            self.stop = (lo, hi)
            # drawn after the other parameters: the model without stop is unchanged
            self.s_L = rng.uniform(lo, hi, size=m)
            self.s_R = rng.uniform(lo, hi, size=m)
            if self.expected_nodes() is None:
                raise ValueError("these stop probabilities give infinite trees (expected "
                                 "children per node >= 1); raise stop")

    def expected_nodes(self):
        """With ``stop``: the expected number of nodes per tree in each state, ``(I - B)^-1
        pi`` with ``B[c, h] = sum_d (1 - s_d[h]) / s_d[h] T_d[c, h]`` (None when the branching
        process is not subcritical)."""
        B = sum(T * ((1.0 - s) / s)[None, :] for T, s in ((self.T_L, self.s_L),
                                                           (self.T_R, self.s_R)))
        if np.max(np.abs(np.linalg.eigvals(B))) >= 1.0:
            return None
        return np.linalg.solve(np.eye(self.n_states) - B, self.pi)

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
        if self.stop is not None:
            return self._sample_stop(int(n), rng, cT, cO)
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

    def _sample_stop(self, n, rng, cT, cO):
        """Trees of the model with valency: states top-down, each node's children drawn
        nearest first until STOP; a tree over ``max_nodes`` is drawn again (counted in
        ``rejected``)."""
        from ..trees.conll import DepSentence

        m, V = self.n_states, self.n_words
        cpi = np.cumsum(self.pi)
        draw = lambda c: min(int(np.searchsorted(c, rng.random())), m - 1)
        out = []
        while len(out) < n:
            # node = [state, left children (nearest first), right children (nearest first)]
            root = [draw(cpi), [], []]
            stack, size = [root], 1
            while stack and size <= self.max_nodes:
                v = stack.pop()
                for side, s_d, key in ((1, self.s_L, "L"), (2, self.s_R, "R")):
                    while rng.random() >= s_d[v[0]]:
                        c = [draw(cT[key][:, v[0]]), [], []]
                        v[side].append(c)
                        stack.append(c)
                        size += 1
            if size > self.max_nodes:
                self.rejected += 1
                continue
            states, heads = [], []

            def emit(v, head):                    # in sentence order; returns v's position
                pos = [emit(c, -1) for c in reversed(v[1])]
                me = len(states)
                states.append(v[0])
                heads.append(head)
                pos += [emit(c, -1) for c in v[2]]
                for p in pos:
                    heads[p] = me + 1
                return me

            emit(root, 0)
            ws = [min(int(np.searchsorted(cO[:, h], rng.random())), V - 1) for h in states]
            k = len(ws)
            out.append(DepSentence(words=[self.words[w] for w in ws], heads=heads,
                                   upos=["X"] * k, xpos=["X"] * k))
        return out

    # ------------------------------------------------------------------------------------------
    def _hidden_basis(self, emission):
        m = self.n_states
        eye = np.eye(m)
        T_L, T_R = self.T_L, self.T_R
        if self.stop is not None:                          # T'_d = T_d diag(1 - s_d)
            T_L, T_R = T_L * (1.0 - self.s_L)[None, :], T_R * (1.0 - self.s_R)[None, :]
        E_L = np.einsum("ab,ja->abj", eye, T_L)     # E[a, b, j] = delta_ab T[j, a]
        E_R = np.einsum("ab,ja->abj", eye, T_R)
        return (np.ascontiguousarray(emission, np.float64), np.ascontiguousarray(E_L),
                np.ascontiguousarray(E_R), self.pi.copy())

    def stop_operators(self):
        """The STOP operators of the true model in the hidden-state basis: ``(diag(s_L),
        diag(s_R))`` (None without ``stop``)."""
        if self.stop is None:
            return None, None
        return np.diag(self.s_L), np.diag(self.s_R)

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
                                             E_R, c1, *self.stop_operators())
        if (status != 0).any():
            raise ValueError("not a dependency tree")
        if emission is None or (sign > 0).all():
            return logabs
        raise ValueError("the emission gives non-positive tree probabilities")

    def brute_force_prob(self, sentence, emission=None, adjacency=False) -> float:
        """``p(x | y)`` by summing over all ``m ** n`` state assignments (tiny trees only);
        with ``stop``, ``p(x, valency | y)``: each node ``i`` in state ``h`` also contributes
        ``(1 - s_L[h]) ** n_L(i) s_L[h] (1 - s_R[h]) ** n_R(i) s_R[h]``; with ``adjacency``
        also ``P(n_d(i) > 0 | h)`` or ``P(n_d(i) = 0 | h)`` per side (``1 - s_d[h]`` or
        ``s_d[h]``): what ``stop_adjacency=True`` estimates from this model's trees."""
        O = self.O if emission is None else emission
        ids = self._word_ids([sentence])[0]
        heads = np.asarray(sentence.heads) - 1
        n = len(ids)
        nl = [int(np.sum((heads == i) & (np.arange(n) < i))) for i in range(n)]
        nr = [int(np.sum((heads == i) & (np.arange(n) > i))) for i in range(n)]
        total = 0.0
        for hs in itertools.product(range(self.n_states), repeat=n):
            p = 1.0
            for i in range(n):
                p *= O[ids[i], hs[i]]
                if self.stop is not None:
                    sl, sr = self.s_L[hs[i]], self.s_R[hs[i]]
                    p *= (1.0 - sl) ** nl[i] * sl * (1.0 - sr) ** nr[i] * sr
                    if adjacency:
                        p *= (1.0 - sl if nl[i] else sl) * (1.0 - sr if nr[i] else sr)
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

    def population_moments(self, features):
        """The exact (expected, per tree) statistics the estimator of the model with valency
        reads, for the word representation ``features`` (``V x k``), as
        :meth:`LatentDependencyModel._stop_operators` takes them: one "node" per hidden state
        ``h`` weighted by its expected count per tree (:meth:`expected_nodes`), with

        * ``X[h] = M e_h`` (``M = F^T O``: the expected vector of the node's word),
        * ``SL[h] = (1 - s_L[h]) / s_L[h] M T_L e_h``: the expected sum of its real left
          children's vectors (geometric count, Wald's identity), ``nL[h] = (1 - s_L[h]) /
          s_L[h]`` their expected number (``SR``, ``nR`` the same on the right),
        * ``root = M pi``: the expected root vector,
        * ``aL[h] = P(n_L > 0 | h) = 1 - s_L[h]`` (``aR`` the same): the weights of the second
          STOP symbol of ``stop_adjacency``.

        Given ``h``, the head's word and its left and right children are independent, so the
        expected products of the estimator (``K``, ``Delta``, ``Sigma``) are these vectors'
        products weighted by ``weights``.  Returns a dict of these arrays and
        ``smoothed_emission = F M`` (the model the estimate converges to; ``O`` for one-hot
        features)."""
        if self.stop is None:
            raise ValueError("population_moments is for the model with stop events")
        F = np.asarray(features, np.float64)
        M = F.T @ self.O                                     # k x m
        rL, rR = (1.0 - self.s_L) / self.s_L, (1.0 - self.s_R) / self.s_R
        return {"X": np.ascontiguousarray(M.T), "SL": np.ascontiguousarray((M @ self.T_L * rL).T),
                "SR": np.ascontiguousarray((M @ self.T_R * rR).T), "nL": rL, "nR": rR,
                "weights": self.expected_nodes(), "root": M @ self.pi,
                "aL": 1.0 - self.s_L, "aR": 1.0 - self.s_R,
                "smoothed_emission": np.ascontiguousarray(F @ M)}
