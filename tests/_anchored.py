"""A planted L-PCFG that satisfies the pivot (anchor) assumption of Cohen & Collins (2014).

:class:`AnchoredExample` samples treebanks from a small latent-variable PCFG whose every latent
state has an inside and an outside anchor, and measures how well a fitted model (e.g.
:class:`~fastspectral.lpcfg.pivot.PivotLPCFG`) recovers its parameters: the synthetic recovery
experiments of the pivot learner (tests and ``benchmarks/bench_pivot.py``; test data, not part
of the package).  The general
synthetic L-PCFG without anchors is :class:`fastspectral.synthetic.LatentPCFG`.

>>> from _anchored import AnchoredExample
>>> ex = AnchoredExample(seed=0)
>>> trees = ex.sample(3, seed=1)
>>> [t.label for t in trees]
['TOP', 'TOP', 'TOP']
"""
from __future__ import annotations

import numpy as np

__all__ = ["AnchoredExample"]


class AnchoredExample:
    """A small L-PCFG whose every latent state has an inside anchor (a rule or word used only in
    that state) and an outside anchor (a parent rule and side that only produce that state), for
    the inside template ``code(node)`` and the outside template ``(code(parent), side)``.

    Symbols ``S`` (one state, root), ``NP``, ``VP`` (two states; ``NP`` can also be the root) and
    pre-terminals ``D``, ``N``, ``V`` (two states).  ``sample(n, seed)`` draws treebank trees;
    ``rules[a]`` lists ``((b, c), P(a -> b c | a, h) per h)``; ``children[(a, b, c)]`` is
    ``p(h2, h3 | a -> b c, h1)`` (``m_a x m_b x m_c``); ``emissions[p] = (words, q)`` with
    ``q[h, i] = q(words[i] | p, h)``; ``root[a] = pi(a, .)``.
    """

    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)
        self.states = {"S": 1, "NP": 2, "VP": 2, "D": 2, "N": 2, "V": 2}
        self.rules = {
            "S": [(("NP", "VP"), [0.6]), (("VP", "NP"), [0.4])],
            "NP": [(("D", "N"), [0.7, 0.0]), (("N", "N"), [0.3, 0.5]), (("N", "D"), [0.0, 0.5])],
            "VP": [(("V", "NP"), [0.6, 0.0]), (("V", "N"), [0.4, 0.6]), (("N", "V"), [0.0, 0.4])],
        }
        # child state distributions; None = a random distribution per parent state
        fixed = {("S", "NP", "VP"): (0, 0), ("S", "VP", "NP"): (1, 1),
                 ("NP", "D", "N"): (0, 0), ("NP", "N", "D"): (1, 1),
                 ("VP", "V", "NP"): (0, None), ("VP", "N", "V"): (None, 1)}
        self.children = {}
        for a, rl in self.rules.items():
            ma = self.states[a]
            for (b, c), _ in rl:
                mb, mc = self.states[b], self.states[c]
                fb, fc = fixed.get((a, b, c), (None, None))
                t = np.zeros((ma, mb, mc))
                for h1 in range(ma):
                    pb = np.eye(mb)[fb] if fb is not None else rng.dirichlet(np.full(mb, 2.0))
                    pc = np.eye(mc)[fc] if fc is not None else rng.dirichlet(np.full(mc, 2.0))
                    t[h1] = np.outer(pb, pc)
                self.children[(a, b, c)] = t
        self.emissions = {
            "D": (["the", "a", "this"], np.array([[0.6, 0.4, 0.0], [0.0, 0.5, 0.5]])),
            "N": (["dog", "cat", "idea", "car"], np.array([[0.5, 0.3, 0.2, 0.0],
                                                           [0.0, 0.3, 0.2, 0.5]])),
            "V": (["runs", "sees", "eats"], np.array([[0.6, 0.4, 0.0], [0.0, 0.5, 0.5]])),
        }
        self.root = {"S": np.array([0.7]), "NP": np.array([0.1, 0.2])}

    def tensor(self, a, b, c) -> np.ndarray:
        """True ``t(a -> b c, h2, h3 | a, h1)`` (``m_a x m_b x m_c``)."""
        probs = dict((bc, p) for bc, p in self.rules[a])[(b, c)]
        return np.asarray(probs)[:, None, None] * self.children[(a, b, c)]

    def sample(self, n, seed=0):
        """``n`` trees (rooted at TOP) drawn from the model."""
        from fastspectral.trees.tree import Tree

        rng = np.random.default_rng(seed)
        roots = [(a, h) for a, v in self.root.items() for h in range(len(v))]
        rp = np.array([self.root[a][h] for a, h in roots])

        def grow(a, h):
            if a in self.emissions:
                words, q = self.emissions[a]
                return Tree(a, [words[rng.choice(len(words), p=q[h])]])
            rl = self.rules[a]
            k = rng.choice(len(rl), p=[p[h] for _, p in rl])
            b, c = rl[k][0]
            t = self.children[(a, b, c)][h]
            flat = rng.choice(t.size, p=t.ravel())
            h2, h3 = divmod(int(flat), t.shape[1])
            return Tree(a, [grow(b, h2), grow(c, h3)])

        out = []
        for _ in range(n):
            a, h = roots[rng.choice(len(roots), p=rp)]
            out.append(Tree("TOP", [grow(a, h)]))
        return out

    def fit_options(self) -> dict:
        """Keyword arguments of :class:`~fastspectral.lpcfg.pivot.PivotLPCFG` matching this
        grammar's states and anchors."""
        return {"n_states": 2, "v": 1, "h": 1, "min_count": 1, "rare_threshold": 0,
                "feature_pairs": ((0, 0),), "state_map": {"S": 1}}

    def recovery_error(self, model) -> dict:
        """Max-abs errors of ``t``, ``q`` and ``pi`` of a fitted model, after the best
        permutation of every symbol's states (matched on ``P(rule | a, h)`` / ``q(. | p, h)``)."""
        from itertools import permutations

        g = model.pcfg_.grammar_
        lg = model.lpcfg_
        sid = g.sym_index
        perm = {}
        # learned per-state signatures
        for a, k in self.states.items():
            if k == 1:
                perm[a] = np.zeros(1, dtype=np.int64)
                continue
            if a in self.emissions:
                words, q = self.emissions[a]
                est = np.stack([self._q(model, a, w) for w in words], axis=1)
                truth = q
            else:
                rl = self.rules[a]
                est = np.stack([lg.tensor(lg.rule_index(sid[a], sid[b], sid[c])).sum((1, 2))
                                for (b, c), _ in rl], axis=1)
                truth = np.stack([np.asarray(p) for _, p in rl], axis=1)
            best = min(permutations(range(k)),
                       key=lambda p: np.abs(est[list(p)] - truth).sum())
            perm[a] = np.array(best)
        t_err = 0.0
        for a, rl in self.rules.items():
            for (b, c), _ in rl:
                est = lg.tensor(lg.rule_index(sid[a], sid[b], sid[c]))
                est = est[perm[a]][:, perm[b]][:, :, perm[c]]
                t_err = max(t_err, float(np.abs(est - self.tensor(a, b, c)).max()))
        q_err = 0.0
        for p, (words, q) in self.emissions.items():
            est = np.stack([self._q(model, p, w) for w in words], axis=1)[perm[p]]
            q_err = max(q_err, float(np.abs(est - q).max()))
        pi_err = 0.0
        for a, v in self.root.items():
            est = lg.root(sid[a])
            est = np.zeros(len(v)) if est is None else est[perm[a]]
            pi_err = max(pi_err, float(np.abs(est - v).max()))
        return {"t": t_err, "q": q_err, "pi": pi_err}

    @staticmethod
    def _q(model, p, word) -> np.ndarray:
        """``q(word | p, h)`` of a fitted model: MLE ``P(word | p)`` times the latent ratio."""
        g = model.pcfg_.grammar_
        a = g.sym_index[p]
        V1 = len(model.vocab_) + 1
        w = model.word_index_[word]
        k = int(np.searchsorted(model.lex_keys_, a * V1 + w))
        ma = int(model.lpcfg_.m[a])
        if k >= len(model.lex_keys_) or model.lex_keys_[k] != a * V1 + w:
            return np.zeros(ma)
        pw = model.lex_count_[k] / model.tag_count_[a]
        off = int(model.lex_off_[k])
        return pw * model.lex_table_[off:off + ma]
