"""Mergeable statistics of the spectral HMM (the statistics protocol of :mod:`fastspectral.base`).

``HMM(method="spectral").fit_partitions(partitions)`` learns the model ``fit`` learns on the
concatenated partitions (without ``dev``: the default or given ridge, state mixing and
interpolation weight), in four passes over the partitions, each one counting what the next
estimate needs:

1. :class:`TokenCounts`: the token strings (lower-cased with ``lowercase``) and the number of
   sequences -> the symbol table (``SymbolTable.build``'s order: most frequent first, ties in
   string order), the vocabulary cap and the smoother's vocabulary;
2. :class:`PairCounts`: the Kneser-Ney bigram counts (``[V, V]``, dense or CSR) and the
   occurrences of every candidate length-2 prefix and suffix (dense code tables) -> the
   smoother and the Hankel basis (the ``max_basis`` most frequent length-2 strings);
3. :class:`HankelCounts`: the Hankel block ``#(p s)`` and the prefix counts ``#(p)`` on that
   basis -> its SVD (``U``, the regularised pseudo-inverse ``X``);
4. :class:`OperatorCounts`: the projected trigram sums ``sum U^T e_s (X^T e_p)^T`` per symbol
   -> the operators ``B_a``.

Every count is an integer (exactly merged); the operators are sums of per-partition sums
(equal to ``fit``'s up to the order of floating-point additions).  Each pass runs the compiled
kernels of :mod:`fastspectral.hmm.spectral` on the partition's framed sequences.  The dense
path only: the length-2 code tables (``(M + 2)^2`` cells, ``M`` the latent symbols) and the
Hankel block must be dense (at most 4M cells: up to ~2,000 latent symbols, ``max_vocab``; the
smoother keeps every symbol, its bigram counts sparse when there are more).
"""
from __future__ import annotations

from collections import Counter
from itertools import chain

import numpy as np

from ..base import Partition, Statistics
from . import hankel as _hk
from . import spectral as _sp
from .data import _RESERVED, UNK, SymbolTable, check_sequences, encode

__all__ = ["TokenCounts", "PairCounts", "HankelCounts", "OperatorCounts", "PassContext"]

#: the smoother's bigram counts of a partition are a dense ``[V, V]`` array up to this many
#: cells, CSR above (``fit``'s rule)
_DENSE_BIGRAMS = _hk._DENSE_COUNT


class TokenCounts(Statistics):
    """Pass 1: token counts (string keys) and the number of sequences."""

    _same = ("lowercase",)

    def __init__(self, lowercase: bool):
        self.lowercase = bool(lowercase)
        self.tokens = Counter()
        self.n_sequences = 0


class PairCounts(Statistics):
    """Pass 2: the smoother's bigram counts and the candidate length-2 prefix / suffix
    counts (by code ``x * (M + 2) + y``)."""

    _same = ("n_symbols",)

    def __init__(self, n_symbols: int, bigrams, prefix_pairs, suffix_pairs):
        self.n_symbols = int(n_symbols)
        self.bigrams = bigrams
        self.prefix_pairs = prefix_pairs
        self.suffix_pairs = suffix_pairs


class HankelCounts(Statistics):
    """Pass 3: the Hankel block ``#(p s)`` [rows, cols] and the prefix counts ``#(p)``."""

    _same = ("n_rows", "n_cols")

    def __init__(self, P, n, n_sequences: int):
        self.n_rows, self.n_cols = int(P.shape[0]), int(P.shape[1])
        self.P = P
        self.n = n
        self.n_sequences = int(n_sequences)


class OperatorCounts(Statistics):
    """Pass 4: ``sum U^T e_s (X^T e_p)^T`` per symbol [M, N, N] (unscaled)."""

    _same = ("shape",)

    def __init__(self, A):
        self.shape = tuple(A.shape)
        self.A = A


def _sequences(items):
    return check_sequences(items.data if isinstance(items, Partition) else items, "sequences")


def token_counts(model, items) -> TokenCounts:
    seqs = _sequences(items)
    out = TokenCounts(model.lowercase)
    flat = chain.from_iterable(seqs)
    out.tokens.update(map(str.lower, flat) if model.lowercase else flat)
    out.n_sequences = len(seqs)
    return out


def symbol_table(model, stats: TokenCounts) -> tuple[SymbolTable, np.ndarray]:
    """``(SymbolTable.build of the merged tokens, counts per symbol id)`` (id 0: every token
    that is not a kept symbol)."""
    from ..lm.stats import check_counts

    check_counts(stats, TokenCounts, model, "sequences")
    mc = int(model.min_count)
    kept = sorted((w for w, c in stats.tokens.items() if c >= mc and w not in _RESERVED),
                  key=lambda w: (-stats.tokens[w], w))
    table = SymbolTable([UNK] + kept, bool(model.lowercase))
    counts = np.zeros(len(table), dtype=np.int64)
    counts[1:] = [stats.tokens[w] for w in kept]
    counts[0] = sum(stats.tokens.values()) - int(counts[1:].sum())
    return table, counts


class PassContext:
    """What a partition needs for passes 2-4 (scattered to the workers): ``stage``, the
    symbol table, the latent symbols ``M``, the smoother's ids ``kid`` and size ``V``, then the
    basis tables and the projections."""

    def __init__(self, stage, symbols, M, kid, V, basis=None, U=None, X=None):
        self.stage = stage
        self.symbols = symbols
        self.M = int(M)
        self.kid = kid
        self.V = int(V)
        self.basis = basis
        self.U = U
        self.X = X

    def next(self, stage, **changes) -> "PassContext":
        new = PassContext(stage, self.symbols, self.M, self.kid, self.V, self.basis, self.U,
                          self.X)
        for k, v in changes.items():
            setattr(new, k, v)
        return new


def latent_frames(items, ctx: PassContext):
    """``(full, enc, F)``: a partition encoded with the context's symbols, its latent symbols
    (the symbols beyond the cap -> 0) and the framed latent sequences (cached on a
    :class:`Partition` for the later passes)."""
    cache = items.cache if isinstance(items, Partition) else {}
    key = ("hmm-frames", tuple(ctx.symbols.symbols), ctx.M)
    if key not in cache:
        from .data import Encoded

        full = encode(_sequences(items), ctx.symbols)
        enc = Encoded(full.offsets, np.where(full.ids <= ctx.M - 1, full.ids, 0))
        cache.clear()
        cache[key] = (full, enc, _hk.frame(enc, ctx.M))
    return cache[key]


def pair_counts(items, ctx: PassContext) -> PairCounts:
    full, enc, F = latent_frames(items, ctx)
    if ctx.V * ctx.V <= _DENSE_BIGRAMS:
        bigrams = _hk._bigram_counts(full.offsets, full.ids, ctx.kid, ctx.V)
    else:                                               # sparse, as fit's large vocabularies
        from ..lm.vocabulary import bigram_matrix
        from .data import frame_ids

        n = full.n_sequences
        framed = frame_ids(full, ctx.kid[full.ids], 0, 1)
        keep = np.ones(max(len(framed) - 1, 0), dtype=bool)
        keep[(full.offsets[1:] + 2 * np.arange(1, n + 1) - 1)[:-1]] = False
        bigrams = bigram_matrix(framed[:-1][keep], framed[1:][keep], ctx.V)
    cp, cs = _hk._pair_counts(F, ctx.M)
    return PairCounts(ctx.M, bigrams, cp, cs)


def hankel_counts(items, ctx: PassContext) -> HankelCounts:
    _, enc, F = latent_frames(items, ctx)
    ptab, stab, n_rows, n_cols = ctx.basis
    P, n = _hk._hankel_counts(F, ctx.M, ptab, stab, n_rows, n_cols, 1.0)
    return HankelCounts(P, n, enc.n_sequences)


def operator_counts(items, ctx: PassContext) -> OperatorCounts:
    _, _, F = latent_frames(items, ctx)
    ptab, stab, _, _ = ctx.basis
    Xe = np.vstack([ctx.X, np.zeros((1, ctx.X.shape[1]))])
    return OperatorCounts(_sp._trigram_operators(F, ctx.M, ptab, stab,
                                                 np.ascontiguousarray(ctx.U), Xe, 1.0))
