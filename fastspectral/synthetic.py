"""Built-in synthetic data: a small English-like latent-variable PCFG with known hidden states.

Kept as one module (about 700 lines): one object, :class:`LatentPCFG`, with the default
grammar it is built from, the refined grammar that only it builds, its sampler and its exact
probabilities (what the tests compare the learners' estimates with).

The model
---------
:class:`LatentPCFG` is an L-PCFG (Cohen et al. style) in Chomsky normal form without unary rules:

* phrasal nonterminals ``S NP VP PP SBAR ADJP`` rewrite with binary rules ``a -> b c`` whose
  children are phrasal nonterminals or preterminals;
* preterminals ``DT NN NNS NNP VB VBD VBZ IN JJ RB PRP CC TO MD . ,`` emit one word each from an
  English-like vocabulary of about 300 words (several words are ambiguous between tags, e.g.
  ``report`` NN/VB, ``reports`` NNS/VBZ, ``that`` DT/IN, ``fast`` JJ/RB, ``read`` VB/VBD);
* every symbol ``a`` (preterminals included) has ``m_a`` hidden states, and all parameters depend on
  them:

  - root ``pi(a, h)``: probability that the sentence root is ``a`` in state ``h``
    (``root[a]``, shape ``(m_a,)``; summed over all ``a`` and ``h`` it is 1);
  - binary ``t(b, h2, c, h3 | a, h1) = p(a -> b c | a, h1) * p(h2, h3 | a -> b c, h1)``:
    ``rule_prob[a]`` has shape ``(m_a, len(rules_by_lhs[a]))`` (rows sum to 1) and
    ``child_states[r]`` has shape ``(m_a, m_b, m_c)`` (each ``[h1]`` slice sums to 1);
  - emissions ``q(x | a, h)``: ``emission[a]`` has shape ``(m_a, len(lexicon[a]))`` (rows sum to 1),
    columns in the order of ``lexicon[a]``.

The probability of a tree with hidden states is the product of the root probability, one
``t(...)`` factor per binary node and one ``q(...)`` factor per preterminal; the probability of a
(skeletal) tree marginalises the states.  Parameters are drawn deterministically from ``seed``
around hand-set English-like base weights; recursion (PP attachment, relative clauses, verb chains)
is damped so that the grammar is subcritical (finite trees with probability 1) and the expected
sentence length is ``target_length`` words.  The rule ``S -> S .`` is tied to hidden state 0 of
``S``: the root ``S`` is mostly in state 0, which usually adds the final punctuation, while inner
``S`` nodes are mostly in other states, which rarely do.

Sampled trees are :class:`fastspectral.trees.Tree` objects rooted at ``TOP``::

    >>> from fastspectral.synthetic import LatentPCFG
    >>> g = LatentPCFG.default(n_states=2, seed=0)
    >>> trees = g.sample(3, seed=1)
    >>> str(trees[0])                                   # doctest: +SKIP
    '(TOP (S (S (NP (DT the) (NN dog)) (VP (VBD saw) (NP (DT a) (NN cat)))) (. .)))'
    >>> g.tree_probability(trees[0]) > 0
    True

Sampling conditions on ``len(sentence) <= max_len`` and on the tree depth ``<= max_depth`` (a
sample over either limit is discarded and drawn again), whereas :meth:`LatentPCFG.tree_probability`
and :meth:`LatentPCFG.sentence_probability` give the unconditional probabilities.
"""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field

import numpy as np

from .trees.tree import Tree

__all__ = ["LatentPCFG", "RefinedGrammar", "DEFAULT_RULES", "DEFAULT_LEXICON", "DEFAULT_START"]

# --------------------------------------------------------------------------------------------
# The default English-like grammar
# --------------------------------------------------------------------------------------------
#: Binary rules ``(lhs, left, right, base_weight, kind)``; ``kind`` is ``""`` (plain), ``"rec"``
#: (optional recursion / adjunction, damped to control sentence length) or ``"top"`` (a wrapper
#: rule ``a -> a X`` meant to apply once at the top, tied to hidden state 0 of ``a``).
DEFAULT_RULES: list[tuple[str, str, str, float, str]] = [
    # sentences
    ("S", "NP", "VP", 6.0, ""),
    ("S", "PRP", "VP", 2.0, ""),
    ("S", "NNP", "VP", 1.5, ""),
    ("S", "NNS", "VP", 1.0, ""),
    ("S", "PP", "S", 1.8, "rec"),
    ("S", "S", ".", 1.0, "top"),
    # noun phrases
    ("NP", "DT", "NN", 5.0, ""),
    ("NP", "DT", "NNS", 2.0, ""),
    ("NP", "JJ", "NNS", 1.0, ""),
    ("NP", "JJ", "NN", 0.7, ""),
    ("NP", "ADJP", "NNS", 0.4, ""),
    ("NP", "NNP", "NNP", 0.8, ""),
    ("NP", "NP", "PP", 4.5, "rec"),
    ("NP", "NP", "SBAR", 1.5, "rec"),
    # verb phrases
    ("VP", "VBD", "NP", 3.0, ""),
    ("VP", "VBZ", "NP", 2.0, ""),
    ("VP", "VB", "NP", 1.5, ""),
    ("VP", "VBD", "PRP", 0.5, ""),
    ("VP", "VBZ", "ADJP", 1.0, ""),
    ("VP", "VBD", "ADJP", 0.5, ""),
    ("VP", "VBD", "PP", 0.8, ""),
    ("VP", "VBD", "RB", 0.4, ""),
    ("VP", "VB", "RB", 0.3, ""),
    ("VP", "MD", "VP", 3.0, "rec"),
    ("VP", "TO", "VP", 1.5, "rec"),
    ("VP", "VBD", "VP", 1.2, "rec"),
    ("VP", "VP", "PP", 3.6, "rec"),
    ("VP", "VBD", "SBAR", 1.5, "rec"),
    ("VP", "VBZ", "SBAR", 0.9, "rec"),
    ("VP", "VP", "SBAR", 0.9, "rec"),
    # prepositional phrases
    ("PP", "IN", "NP", 5.0, ""),
    ("PP", "IN", "PRP", 1.0, ""),
    ("PP", "IN", "NNP", 1.0, ""),
    ("PP", "TO", "NP", 1.0, ""),
    # subordinate clauses ("that S", "because S", "and S", ", and S")
    ("SBAR", "IN", "S", 3.0, ""),
    ("SBAR", "CC", "S", 1.0, ""),
    ("SBAR", ",", "SBAR", 1.2, "rec"),
    # adjective phrases
    ("ADJP", "RB", "JJ", 3.0, ""),
    ("ADJP", "JJ", "PP", 1.0, ""),
    ("ADJP", "RB", "ADJP", 0.9, "rec"),
]

#: Root symbols and their base weights.
DEFAULT_START: dict[str, float] = {"S": 1.0}

#: Words of each preterminal, most frequent first (base frequencies are Zipf-like in this order).
DEFAULT_LEXICON: dict[str, list[str]] = {
    "DT": "the a this that these those every some no each an all another".split(),
    "NN": ("dog cat man woman house car city company market price year day child teacher "
           "student book letter story report plan work call walk run rise fall increase need "
           "change offer talk show watch visit cost world country school president government "
           "problem idea question river garden window door table morning night week money "
           "music game").split(),
    "NNS": ("dogs cats men women houses cars cities companies markets prices years days children "
            "teachers students books letters stories reports plans works calls walks runs rises "
            "falls increases needs changes offers talks shows watches visits costs").split(),
    "NNP": ("John Mary London Paris IBM Smith Tuesday Monday Friday Chicago Texas Google Anna "
            "Peter Boston Europe China Japan Obama Wall Street Congress Sony Ford Apple Berlin "
            "Tokyo Rome Alice Bob").split(),
    "VB": ("see make take buy sell give find know think tell become leave feel bring begin keep "
           "hold report walk run plan work call need change offer talk show watch visit cost "
           "put cut set read").split(),
    "VBD": ("saw made took bought sold gave found knew thought told became left felt brought "
            "began kept held said wanted liked reported walked ran planned worked called needed "
            "changed offered put cut set read").split(),
    "VBZ": ("sees makes takes buys sells gives finds knows thinks tells becomes leaves feels "
            "brings begins keeps holds says is has reports walks plans works calls needs changes "
            "offers talks shows watches visits costs").split(),
    "IN": ("in on at with from by for of about after before because if that while since under "
           "over like near into").split(),
    "JJ": ("big small new old good bad long short young happy sad large little great high low "
           "red green black white strong weak rich poor early late fast hard quiet loud cold "
           "warm dark bright afraid proud").split(),
    "RB": ("very quickly slowly often never always also still really quite too here now fast "
           "early late hard soon again well").split(),
    "PRP": "he she it they we I you him her them us me".split(),
    "CC": "and but or yet".split(),
    "TO": ["to"],
    "MD": "will can may must should would could might".split(),
    ".": [".", "!", "?"],
    ",": [","],
}


# --------------------------------------------------------------------------------------------
# Refined (state-annotated) grammar
# --------------------------------------------------------------------------------------------
@dataclass
class RefinedGrammar:
    """The PCFG over annotated symbols ``NP_0, NP_1, ...`` equivalent to a :class:`LatentPCFG`.

    Attributes
    ----------
    symbols : list[str]
        Refined symbols ``f"{a}_{h}"``; phrasal ones first, then preterminals.
    root : dict[str, float]
        ``p(root = a_h)`` (sums to 1).
    binary : list[tuple[str, str, str, float]]
        ``(a_h1, b_h2, c_h3, prob)`` with ``prob = p(a -> b c | a, h1) * p(h2, h3 | a -> b c, h1)``;
        for each phrasal refined symbol the probabilities sum to 1.
    emission : list[tuple[str, str, float]]
        ``(a_h, word, q(word | a, h))``; for each refined preterminal they sum to 1.
    vocabulary : list[str]
        Every word of the grammar (sorted).
    """

    symbols: list[str]
    root: dict[str, float]
    binary: list[tuple[str, str, str, float]]
    emission: list[tuple[str, str, float]]
    vocabulary: list[str]
    _arrays: tuple | None = field(default=None, repr=False, compare=False)

    def to_arrays(self):
        """Dense arrays ``(index, root_vec, binary, emission_matrix, word_index)``.

        ``index`` maps refined symbol -> row; ``root_vec[i]`` is the root probability,
        ``binary[a, b, c]`` the rule probability (shape ``(R, R, R)``), ``emission_matrix[a, w]``
        the emission probability of word ``vocabulary[w]`` and ``word_index`` maps word -> column.
        """
        if self._arrays is None:
            index = {s: i for i, s in enumerate(self.symbols)}
            word_index = {w: i for i, w in enumerate(self.vocabulary)}
            R = len(self.symbols)
            root_vec = np.zeros(R)
            for s, p in self.root.items():
                root_vec[index[s]] = p
            binary = np.zeros((R, R, R))
            for a, b, c, p in self.binary:
                binary[index[a], index[b], index[c]] += p
            em = np.zeros((R, len(self.vocabulary)))
            for a, w, p in self.emission:
                em[index[a], word_index[w]] += p
            self._arrays = (index, root_vec, binary, em, word_index)
        return self._arrays


# --------------------------------------------------------------------------------------------
# The latent-variable PCFG
# --------------------------------------------------------------------------------------------
def _as_state_counts(n_states, symbols, rng) -> dict[str, int]:
    """Normalise the ``n_states`` argument to ``{symbol: m}``."""
    if isinstance(n_states, dict):
        out = {}
        for s in symbols:
            m = int(n_states.get(s, 1))
            if m < 1:
                raise ValueError(f"n_states[{s!r}] must be >= 1, got {m}")
            out[s] = m
        return out
    if isinstance(n_states, (tuple, list)):
        if len(n_states) != 2:
            raise ValueError("n_states as a range must be (low, high)")
        lo, hi = int(n_states[0]), int(n_states[1])
        if not 1 <= lo <= hi:
            raise ValueError(f"n_states range must satisfy 1 <= low <= high, got {n_states}")
        return {s: int(rng.integers(lo, hi + 1)) for s in symbols}
    m = int(n_states)
    if m < 1:
        raise ValueError(f"n_states must be >= 1, got {n_states}")
    return {s: m for s in symbols}


class LatentPCFG:
    """A latent-variable PCFG in CNF (no unary rules) with known hidden states.

    Parameters
    ----------
    rules : list of ``(lhs, left, right, weight, kind)``
        Binary rules with base weights; ``kind`` is ``""``, ``"rec"`` (damped recursion) or
        ``"top"`` (wrapper rule ``a -> a X`` tied to state 0 of ``a``).  Symbols that appear on a
        left-hand side are the phrasal nonterminals; the keys of ``lexicon`` are the preterminals.
    lexicon : dict ``preterminal -> [words]``
        Words each preterminal emits, most frequent first.
    start : dict ``symbol -> weight``
        Base weights of the root symbols.
    n_states : int, ``(low, high)`` or dict
        Hidden states per symbol: one count for all, a range drawn per symbol from the seed, or a
        ``{symbol: m}`` dict (missing symbols get 1).
    seed : int
        Seed of every random parameter (the model is a deterministic function of its arguments).
    target_length : float
        Recursive (``"rec"``) rules are damped until the expected sentence length is at most this.
    max_len, max_depth : int
        Sampling limits (a sample over either is drawn again).
    rule_noise, state_concentration, emission_concentration : float
        Strength of the latent dependence: log-normal noise of the per-state rule weights, and
        Dirichlet concentrations of the child-state and emission distributions (smaller = sharper).

    Attributes
    ----------
    nonterminals, preterminals, symbols : list[str]
        Phrasal symbols, preterminals, and both (phrasal first).
    n_states : dict[str, int]
        ``m_a`` for every symbol.
    rules : list[tuple[str, str, str]]
        Binary rules ``(a, b, c)``; ``rule_index[(a, b, c)]`` is the position of a rule and
        ``rules_by_lhs[a]`` lists the rule ids of ``a`` (the column order of ``rule_prob[a]``).
    rule_kind : list[str]
        Kind of each rule (``""``, ``"rec"``, ``"top"``).
    lexicon : dict[str, list[str]]; vocabulary : list[str]
    root : dict[str, np.ndarray]            ``pi(a, h)``, shape ``(m_a,)``
    rule_prob : dict[str, np.ndarray]       ``p(a -> b c | a, h1)``, shape ``(m_a, n_rules(a))``
    child_states : list[np.ndarray]         ``p(h2, h3 | r, h1)``, shape ``(m_a, m_b, m_c)``
    emission : dict[str, np.ndarray]        ``q(x | a, h)``, shape ``(m_a, len(lexicon[a]))``
    recursion_damping : float               factor applied to ``"rec"`` rule weights
    """

    def __init__(self, rules, lexicon, start, n_states=2, seed=0, *, target_length=14.0,
                 max_len=40, max_depth=60, rule_noise=0.8, state_concentration=0.5,
                 emission_concentration=0.5):
        rng = np.random.default_rng(seed)
        self.seed = seed
        self.max_len = int(max_len)
        self.max_depth = int(max_depth)
        self.target_length = float(target_length)

        # ---- symbols and rules
        nonterminals: list[str] = []
        for r in rules:
            if r[0] not in nonterminals:
                nonterminals.append(r[0])
        self.nonterminals = nonterminals
        self.preterminals = list(lexicon)
        overlap = set(nonterminals) & set(self.preterminals)
        if overlap:
            raise ValueError(f"symbols both phrasal and preterminal: {sorted(overlap)}")
        self.symbols = self.nonterminals + self.preterminals
        known = set(self.symbols)
        self.rules = []
        self.rule_kind = []
        base_w = []
        self.rule_index = {}
        for spec in rules:
            a, b, c, w = spec[:4]
            kind = spec[4] if len(spec) > 4 else ""
            for s in (b, c):
                if s not in known:
                    raise ValueError(f"rule {a} -> {b} {c}: symbol {s!r} has no rules and no words")
            if (a, b, c) in self.rule_index:
                raise ValueError(f"duplicate rule {a} -> {b} {c}")
            if kind not in ("", "rec", "top"):
                raise ValueError(f"rule {a} -> {b} {c}: unknown kind {kind!r}")
            if kind == "top" and b != a:
                raise ValueError(f"'top' rule {a} -> {b} {c} must have the form a -> a X")
            if not w > 0:
                raise ValueError(f"rule {a} -> {b} {c}: weight must be positive")
            self.rule_index[(a, b, c)] = len(self.rules)
            self.rules.append((a, b, c))
            self.rule_kind.append(kind)
            base_w.append(float(w))
        self.rules_by_lhs = {a: [] for a in self.nonterminals}
        self._rule_pos = []  # column of each rule in rule_prob[lhs]
        for i, (a, _, _) in enumerate(self.rules):
            self._rule_pos.append(len(self.rules_by_lhs[a]))
            self.rules_by_lhs[a].append(i)
        for s in start:
            if s not in self.rules_by_lhs:
                raise ValueError(f"start symbol {s!r} has no rules")
        self.lexicon = {a: list(ws) for a, ws in lexicon.items()}
        for a, ws in self.lexicon.items():
            if not ws or len(set(ws)) != len(ws):
                raise ValueError(f"lexicon of {a!r} must be a non-empty list of distinct words")
        self.vocabulary = sorted({w for ws in self.lexicon.values() for w in ws})
        self.word_index = {a: {w: i for i, w in enumerate(ws)} for a, ws in self.lexicon.items()}
        self.tags_of_word: dict[str, list[str]] = {}
        for a, ws in self.lexicon.items():
            for w in ws:
                self.tags_of_word.setdefault(w, []).append(a)
        self.n_states = _as_state_counts(n_states, self.symbols, rng)
        m = self.n_states

        # ---- root pi(a, h)
        root_raw = {}
        for a, w in start.items():
            v = w * np.exp(rule_noise * rng.standard_normal(m[a]))
            if any(self.rule_kind[r] == "top" for r in self.rules_by_lhs[a]) and m[a] > 1:
                v[1:] *= 0.1 * w / v[1:].sum()  # the root is mostly in the state closing sentences
                v[0] = 0.9 * w
            root_raw[a] = v
        total = sum(v.sum() for v in root_raw.values())
        self.root = {a: v / total for a, v in root_raw.items()}

        # ---- per-state rule weights (before recursion damping)
        self._raw_rule_w = {}
        for a in self.nonterminals:
            ids = self.rules_by_lhs[a]
            w = np.array([base_w[r] for r in ids])[None, :] * np.exp(
                rule_noise * rng.standard_normal((m[a], len(ids))))
            for k, r in enumerate(ids):
                if self.rule_kind[r] == "top" and m[a] > 1:
                    others = w.sum(axis=1) - w[:, k]
                    w[:, k] = 0.01 * others    # states >= 1: about 1 % "close again"
                    w[0, k] = 6.0 * others[0]  # state 0: about 86 % "close"
            self._raw_rule_w[a] = w

        # ---- child states p(h2, h3 | r, h1)
        self.child_states = []
        for r, (a, b, c) in enumerate(self.rules):
            cs = rng.dirichlet(np.full(m[b] * m[c], state_concentration), size=m[a])
            cs = 0.95 * cs + 0.05 / (m[b] * m[c])  # keep every combination possible
            cs = cs.reshape(m[a], m[b], m[c])
            if self.rule_kind[r] == "top" and m[b] > 1:
                cs[:, 0, :] *= 0.02  # the inner node is rarely in the closing state
                cs /= cs.sum(axis=(1, 2), keepdims=True)
            self.child_states.append(cs)

        # ---- emissions q(x | a, h)
        self.emission = {}
        for a, ws in self.lexicon.items():
            zipf = 1.0 / np.arange(1, len(ws) + 1)
            zipf /= zipf.sum()
            d = rng.dirichlet(np.full(len(ws), emission_concentration), size=m[a])
            e = 0.8 * d * zipf[None, :] / (d * zipf[None, :]).sum(axis=1, keepdims=True)
            e += 0.2 * zipf[None, :]
            self.emission[a] = e / e.sum(axis=1, keepdims=True)

        # ---- recursion control
        self.recursion_damping = self._choose_damping()
        self.rule_prob = self._rule_probs(self.recursion_damping)
        self._refined = None
        self._sampler = None
        self._rng = np.random.default_rng(None if seed is None else [int(seed) & 0xFFFFFFFF, 1])

    # ------------------------------------------------------------------ construction helpers
    @classmethod
    def default(cls, n_states=2, seed=0, **kwargs) -> "LatentPCFG":
        """The built-in English-like grammar (:data:`DEFAULT_RULES`, :data:`DEFAULT_LEXICON`).

        ``n_states`` is an int (every symbol), a ``(low, high)`` range drawn per symbol, or a dict.
        Other keyword arguments go to the constructor (``target_length``, ``max_len``, ...).
        """
        return cls(DEFAULT_RULES, DEFAULT_LEXICON, DEFAULT_START, n_states=n_states, seed=seed,
                   **kwargs)

    def _rule_probs(self, damping: float) -> dict[str, np.ndarray]:
        out = {}
        for a in self.nonterminals:
            w = self._raw_rule_w[a].copy()
            for k, r in enumerate(self.rules_by_lhs[a]):
                if self.rule_kind[r] == "rec":
                    w[:, k] *= damping
            out[a] = w / w.sum(axis=1, keepdims=True)
        return out

    def _offsets(self):
        off, o = {}, 0
        for s in self.symbols:
            off[s] = o
            o += self.n_states[s]
        return off, o

    def _mean_matrix(self, rule_prob) -> np.ndarray:
        """``M[(a,h1), (b,h2)]``: expected number of children ``(b, h2)`` of a node ``(a, h1)``."""
        off, n = self._offsets()
        M = np.zeros((n, n))
        for r, (a, b, c) in enumerate(self.rules):
            p = rule_prob[a][:, self._rule_pos[r]][:, None]
            cs = self.child_states[r]
            ma, mb, mc = cs.shape
            M[off[a]:off[a] + ma, off[b]:off[b] + mb] += p * cs.sum(axis=2)
            M[off[a]:off[a] + ma, off[c]:off[c] + mc] += p * cs.sum(axis=1)
        return M

    def _length_stats(self, rule_prob):
        """``(spectral radius, expected sentence length)`` under ``rule_prob``."""
        M = self._mean_matrix(rule_prob)
        rho = float(np.max(np.abs(np.linalg.eigvals(M)))) if len(M) else 0.0
        if rho >= 1.0:
            return rho, math.inf
        off, n = self._offsets()
        e = np.zeros(n)
        for a in self.preterminals:
            e[off[a]:off[a] + self.n_states[a]] = 1.0
        L = np.linalg.solve(np.eye(n) - M, e)
        pi = np.zeros(n)
        for a, v in self.root.items():
            pi[off[a]:off[a] + len(v)] = v
        return rho, float(pi @ L)

    def _choose_damping(self, max_radius=0.9) -> float:
        """Largest factor in (0, 1] for the ``"rec"`` rules meeting the length/radius targets."""
        def ok(lam):
            rho, length = self._length_stats(self._rule_probs(lam))
            return rho <= max_radius and length <= self.target_length

        if ok(1.0):
            return 1.0
        lo, hi = 0.0, 1.0
        if not ok(lo):
            rho, length = self._length_stats(self._rule_probs(0.0))
            if rho >= 1.0:
                raise ValueError("the grammar without recursive rules is not finite "
                                 f"(spectral radius {rho:.3f}); mark its recursive rules 'rec'")
            return 0.0  # shortest possible grammar; target_length is below its expected length
        for _ in range(40):
            mid = 0.5 * (lo + hi)
            if ok(mid):
                lo = mid
            else:
                hi = mid
        return lo

    def expected_length(self) -> float:
        """Expected number of words of an (unconditioned) sentence."""
        return self._length_stats(self.rule_prob)[1]

    def spectral_radius(self) -> float:
        """Spectral radius of the mean matrix over ``(symbol, state)`` pairs (< 1: finite trees)."""
        return self._length_stats(self.rule_prob)[0]

    def binary_tensor(self, r: int) -> np.ndarray:
        """``t(b, h2, c, h3 | a, h1)`` of rule ``r`` as an array of shape ``(m_a, m_b, m_c)``."""
        a = self.rules[r][0]
        return self.rule_prob[a][:, self._rule_pos[r]][:, None, None] * self.child_states[r]

    # ------------------------------------------------------------------ sampling
    def _build_sampler(self):
        """Cumulative tables for fast sampling with ``bisect``."""
        root_items, root_cum, acc = [], [], 0.0
        for a, v in self.root.items():
            for h, p in enumerate(v):
                acc += float(p)
                root_items.append((a, h))
                root_cum.append(acc)
        root_cum[-1] = math.inf
        rule_cum = {}
        for a in self.nonterminals:
            ids = self.rules_by_lhs[a]
            for h in range(self.n_states[a]):
                c = np.cumsum(self.rule_prob[a][h]).tolist()
                c[-1] = math.inf
                rule_cum[a, h] = (c, ids)
        state_cum = {}
        for r, (a, b, c) in enumerate(self.rules):
            mc = self.n_states[c]
            for h in range(self.n_states[a]):
                cum = np.cumsum(self.child_states[r][h].ravel()).tolist()
                cum[-1] = math.inf
                state_cum[r, h] = (cum, mc)
        word_cum = {}
        for a in self.preterminals:
            for h in range(self.n_states[a]):
                cum = np.cumsum(self.emission[a][h]).tolist()
                cum[-1] = math.inf
                word_cum[a, h] = cum
        self._sampler = (root_items, root_cum, rule_cum, state_cum, word_cum)

    def _sample_one(self, uniform, max_len, max_depth):
        """One tree (below ``TOP``) and its preorder states, or ``None`` when over a limit."""
        if self._sampler is None:
            self._build_sampler()
        root_items, root_cum, rule_cum, state_cum, word_cum = self._sampler
        br = bisect.bisect_right
        rules = self.rules
        lexicon = self.lexicon
        a, h = root_items[br(root_cum, uniform())]
        root = Tree(a, [])
        states = []
        n_words = 0
        stack = [(root, a, h, 1)]
        pop, push = stack.pop, stack.append
        while stack:
            node, a, h, depth = pop()
            states.append(h)
            wc = word_cum.get((a, h))
            if wc is not None:
                node.children.append(lexicon[a][br(wc, uniform())])
                n_words += 1
                if n_words > max_len:
                    return None
                continue
            if depth >= max_depth:
                return None
            cum, ids = rule_cum[a, h]
            r = ids[br(cum, uniform())]
            _, b, c = rules[r]
            scum, mc = state_cum[r, h]
            k = br(scum, uniform())
            left, right = Tree(b, []), Tree(c, [])
            node.children.append(left)
            node.children.append(right)
            push((right, c, k % mc, depth + 1))
            push((left, b, k // mc, depth + 1))
        return root, states

    def sample(self, n: int, seed=None, with_states: bool = False, max_len: int | None = None):
        """Sample ``n`` trees rooted at ``TOP``, e.g. ``(TOP (S (NP (DT the) (NN dog)) (VP ...)))``.

        ``seed`` (int) makes the draw reproducible; with ``seed=None`` the model's own generator
        (seeded from the model seed) is used and advances between calls.  Trees longer than
        ``max_len`` words (default ``self.max_len``) or deeper than ``self.max_depth`` are
        discarded and drawn again.  With ``with_states=True`` returns ``(trees, states)`` where
        ``states[i]`` lists the hidden state of every node of ``trees[i]`` below ``TOP`` in preorder
        (aligned with ``trees[i].spans()[1:]``; preterminals included, words excluded).
        """
        if n < 0:
            raise ValueError("n must be >= 0")
        rng = self._rng if seed is None else np.random.default_rng(seed)
        max_len = self.max_len if max_len is None else int(max_len)
        if max_len < 1:
            raise ValueError("max_len must be >= 1")
        buf: list[float] = []

        def uniform():
            if not buf:
                buf.extend(rng.random(4096).tolist())
                buf.reverse()
            return buf.pop()

        trees, all_states = [], []
        rejected = 0
        while len(trees) < n:
            res = self._sample_one(uniform, max_len, self.max_depth)
            if res is None:
                rejected += 1
                if rejected > 1000 + 100 * n:
                    raise RuntimeError(f"could not sample trees of at most {max_len} words "
                                       f"(rejected {rejected} draws); raise max_len")
                continue
            tree, states = res
            trees.append(Tree("TOP", [tree]))
            all_states.append(states)
        return (trees, all_states) if with_states else trees

    # ------------------------------------------------------------------ exact probabilities
    def _skeleton(self, tree):
        """The grammar tree below ``TOP`` (accepts a Tree or a bracket string)."""
        if isinstance(tree, str):
            tree = Tree.fromstring(tree)
        ch = tree.children
        if tree.label in ("TOP", "") and len(ch) == 1 and isinstance(ch[0], Tree):
            tree = tree.children[0]
        return tree

    def tree_log_probability(self, tree) -> float:
        """Log of :meth:`tree_probability` (``-inf`` for an impossible tree), without underflow."""
        root = self._skeleton(tree)
        if root.label not in self.root:
            return -math.inf
        log_scale = 0.0
        beta = {}
        stack = [(root, False)]
        while stack:
            node, done = stack.pop()
            ch = node.children
            if len(ch) == 1 and type(ch[0]) is str:
                idx = self.word_index.get(node.label, {}).get(ch[0])
                if idx is None:
                    return -math.inf
                v = self.emission[node.label][:, idx]
            elif not done:
                if len(ch) != 2 or type(ch[0]) is str or type(ch[1]) is str:
                    return -math.inf
                stack.append((node, True))
                stack.append((ch[1], False))
                stack.append((ch[0], False))
                continue
            else:
                r = self.rule_index.get((node.label, ch[0].label, ch[1].label))
                if r is None:
                    return -math.inf
                a = node.label
                bl, bc = beta.pop(id(ch[0])), beta.pop(id(ch[1]))
                inside = np.einsum("ijk,j,k->i", self.child_states[r], bl, bc)
                v = self.rule_prob[a][:, self._rule_pos[r]] * inside
            s = v.max()
            if s <= 0:
                return -math.inf
            log_scale += math.log(s)
            beta[id(node)] = v / s
        total = float(self.root[root.label] @ beta[id(root)])
        if total <= 0:
            return -math.inf
        return log_scale + math.log(total)

    def tree_probability(self, tree) -> float:
        """Exact ``p(tree)``: the inside pass over the fixed skeleton, marginalising hidden states.

        ``tree`` is a :class:`Tree` (with or without the ``TOP`` wrapper) or a bracket string.
        Trees the grammar cannot generate (unknown rule or word, unary or n-ary node) get 0.
        """
        return math.exp(self.tree_log_probability(tree))

    def refined_rules(self) -> RefinedGrammar:
        """The equivalent PCFG over annotated symbols ``a_h`` (see :class:`RefinedGrammar`)."""
        if self._refined is not None:
            return self._refined
        name = {(a, h): f"{a}_{h}" for a in self.symbols for h in range(self.n_states[a])}
        symbols = [name[a, h] for a in self.symbols for h in range(self.n_states[a])]
        root = {name[a, h]: float(p) for a, v in self.root.items() for h, p in enumerate(v)}
        binary = []
        for r, (a, b, c) in enumerate(self.rules):
            t = self.binary_tensor(r)
            for h1, h2, h3 in np.ndindex(t.shape):
                binary.append((name[a, h1], name[b, h2], name[c, h3], float(t[h1, h2, h3])))
        emission = []
        for a, ws in self.lexicon.items():
            e = self.emission[a]
            for h in range(self.n_states[a]):
                emission.extend((name[a, h], w, float(e[h, i])) for i, w in enumerate(ws))
        self._refined = RefinedGrammar(symbols, root, binary, emission, list(self.vocabulary))
        return self._refined

    def sentence_probability(self, words) -> float:
        """Exact ``p(words)``, summed over every tree and state assignment (CKY inside, NumPy).

        Uses dense arrays over the refined grammar: cost ``O(n^3 R^3)`` for ``R`` refined symbols,
        meant for short sentences (tests).  Unknown words give 0.
        """
        words = list(words)
        n = len(words)
        if n == 0:
            return 0.0
        index, root_vec, binary, em, word_index = self.refined_rules().to_arrays()
        R = len(root_vec)
        B = binary.reshape(R, R * R)
        chart = {}
        for i, w in enumerate(words):
            j = word_index.get(w)
            if j is None:
                return 0.0
            chart[i, i + 1] = em[:, j]
        for span in range(2, n + 1):
            for i in range(n - span + 1):
                j = i + span
                outer = np.zeros((R, R))
                for k in range(i + 1, j):
                    outer += np.outer(chart[i, k], chart[k, j])
                chart[i, j] = B @ outer.ravel()
        return float(root_vec @ chart[0, n])
