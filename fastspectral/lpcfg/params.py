"""Parameter arrays of a latent-variable PCFG in the form the compiled tensor inside-outside uses.

An L-PCFG here has symbols ``0..S-1``; symbol ``a`` has ``m[a]`` latent dimensions.  Its parameters:

* a tensor ``T^{a->b c}`` of shape ``(m_a, m_b, m_c)`` per binary rule,
* a matrix ``U^{a->p}`` of shape ``(m_a, m_p)`` per unary rule (``p`` a preterminal),
* a root vector ``c1_a`` (length ``m_a``) for every symbol that can be the child of ``TOP``,
* emission vectors, supplied per sentence by the caller (see :func:`tensor_inside_outside`).

The same arrays hold both a true latent model (``T[h, h2, h3] = p(a -> b c, h2, h3 | a, h)``,
emissions ``q(x | p, h)``, ``c1 = pi(a, h)``) and the spectral estimates (observable
representation of Cohen et al. 2012, where the entries are arbitrary reals): the inside-outside
algebra is the same.
"""
from __future__ import annotations

import numpy as np

from .._threads import available_cores

__all__ = ["LatentGrammar", "tensor_inside_outside"]


def block_offsets(sizes) -> np.ndarray:
    """Offsets of consecutive blocks in a flat array.

    Parameters
    ----------
    sizes : array_like of int
        Entries of every block, in order.

    Returns
    -------
    numpy.ndarray
        int64 array of ``len(sizes) + 1`` entries: block ``i`` is ``[out[i], out[i + 1])``,
        ``out[-1]`` the total size.

    Examples
    --------
    >>> block_offsets([2, 3, 1]).tolist()
    [0, 2, 5, 6]
    """
    out = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=out[1:])
    return out


def _flat_blocks(blocks, off: np.ndarray, what: str, keep32: bool = False) -> np.ndarray:
    """The float64 flat array of ``blocks`` (one flat array already, or a sequence of blocks
    concatenated in order; ``keep32``: one float32 array stays float32), checked to hold the
    ``off[-1]`` entries of the offsets ``off``; ``what`` names the blocks in the error."""
    if isinstance(blocks, np.ndarray) and blocks.ndim == 1:
        flat = np.ascontiguousarray(
            blocks, dtype=np.float32 if keep32 and blocks.dtype == np.float32 else np.float64)
    else:
        flat = (np.concatenate([np.asarray(b, dtype=np.float64).ravel() for b in blocks])
                if len(off) > 1 else np.zeros(0))
    if flat.shape[0] != off[-1]:
        raise ValueError(f"{what} do not match the state counts")
    return flat


def _csr_by(keys: np.ndarray, n: int):
    """Group indices ``0..len(keys)-1`` by ``keys`` (values in ``0..n-1``): (ptr[n+1], order)."""
    keys = np.asarray(keys, dtype=np.int64)
    order = np.argsort(keys, kind="stable").astype(np.int32)
    ptr = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.bincount(keys, minlength=n), out=ptr[1:])
    return ptr, order


class LatentGrammar:
    """Flat parameter arrays of a latent-variable PCFG (see the module docstring).

    Parameters are given as lists/arrays; ``tensors[r]`` has shape ``(m[a], m[b], m[c])`` for
    binary rule ``r = (bin_parent[r], bin_left[r], bin_right[r])``, ``unary[u]`` shape
    ``(m[a], m[p])``, ``roots`` maps a symbol id to its length-``m[a]`` vector ``c1_a``.
    """

    def __init__(self, m, bin_parent, bin_left, bin_right, tensors, un_parent, un_child, unary,
                 roots: dict):
        self.m = np.ascontiguousarray(m, dtype=np.int32)
        self.S = int(self.m.shape[0])
        self.bin_parent = np.ascontiguousarray(bin_parent, dtype=np.int32)
        self.bin_left = np.ascontiguousarray(bin_left, dtype=np.int32)
        self.bin_right = np.ascontiguousarray(bin_right, dtype=np.int32)
        self.un_parent = np.ascontiguousarray(un_parent, dtype=np.int32)
        self.un_child = np.ascontiguousarray(un_child, dtype=np.int32)
        m64 = self.m.astype(np.int64)
        self.toff = block_offsets(m64[self.bin_parent] * m64[self.bin_left] * m64[self.bin_right])
        # float32 binary tensors stay float32 (see LatentPCFGBase.float32_tensors)
        self.T = _flat_blocks(tensors, self.toff, "binary tensors", keep32=True)
        self.uoff = block_offsets(m64[self.un_parent] * m64[self.un_child])
        self.U = _flat_blocks(unary, self.uoff, "unary matrices")
        self.c1off = np.full(self.S, -1, dtype=np.int64)
        chunks, pos = [], 0
        for a in sorted(roots):
            v = np.asarray(roots[a], dtype=np.float64).ravel()
            if v.shape[0] != self.m[a]:
                raise ValueError(f"root vector of symbol {a} has length {v.shape[0]} != m = {self.m[a]}")
            self.c1off[a] = pos
            chunks.append(v)
            pos += v.shape[0]
        self.c1 = np.concatenate(chunks) if chunks else np.zeros(0)
        self._index()

    def _index(self):
        self.rl_ptr, self.rl_rule = _csr_by(self.bin_left, self.S)
        self.uc_ptr, self.uc_rule = _csr_by(self.un_child, self.S)

    # ---- accessors (tests, tree scoring) ----
    def tensor(self, r: int) -> np.ndarray:
        """The ``(m_a, m_b, m_c)`` tensor of binary rule ``r`` (a view)."""
        a, b, c = self.bin_parent[r], self.bin_left[r], self.bin_right[r]
        return self.T[self.toff[r]:self.toff[r + 1]].reshape(self.m[a], self.m[b], self.m[c])

    def unary(self, u: int) -> np.ndarray:
        """The ``(m_a, m_p)`` matrix of unary rule ``u`` (a view)."""
        return self.U[self.uoff[u]:self.uoff[u + 1]].reshape(self.m[self.un_parent[u]],
                                                            self.m[self.un_child[u]])

    def root(self, a: int):
        """``c1_a`` or None when ``a`` never roots a tree."""
        o = self.c1off[a]
        return None if o < 0 else self.c1[o:o + self.m[a]]

    def arrays(self, prefix: str = "") -> dict:
        """The defining arrays (for model files)."""
        names = ["m", "bin_parent", "bin_left", "bin_right", "T", "un_parent", "un_child", "U",
                 "c1", "c1off"]
        return {prefix + k: getattr(self, k) for k in names}

    @classmethod
    def from_arrays(cls, arrays: dict, prefix: str = "", n_symbols: int | None = None
                    ) -> "LatentGrammar":
        """Inverse of :meth:`arrays`, every array validated first (model files are untrusted:
        :mod:`fastspectral.io.validate`): latent sizes 1 .. 32767 (``n_symbols`` of them when
        given), rule symbols in range, parameter arrays finite and exactly as long as the state
        counts make them, root offsets inside ``c1``; a bad array raises
        :class:`~fastspectral.errors.ModelFileError` naming it."""
        from ..errors import ModelFileError
        from ..io import validate as V

        name = lambda k: prefix + k  # noqa: E731
        m = V.get(arrays, name("m"), "int", dtype=np.int64)
        S = m.shape[0]
        if S == 0 or (n_symbols is not None and S != n_symbols):
            V.fail(name("m"), f"{S} latent sizes where the grammar has {n_symbols} symbols")
        V.check_index(m, name("m"), 1, 32768)

        def sym(k, n=None):
            x = V.get(arrays, name(k), "int", shape=None if n is None else (n,), dtype=np.int32)
            return V.check_index(x, name(k), 0, S)

        def params(k, size, keep32=False):
            x = np.asarray(arrays.get(name(k), ()))
            x = V.get(arrays, name(k), "float",
                      dtype=np.float32 if keep32 and x.dtype == np.float32 else np.float64)
            V.check_finite(x, name(k))
            if x.shape[0] != size:
                V.fail(name(k), f"{x.shape[0]} values where the latent sizes need {size}")
            return x

        bp = sym("bin_parent")
        R = bp.shape[0]
        bl, br = sym("bin_left", R), sym("bin_right", R)
        T = params("T", int((m[bp] * m[bl] * m[br]).sum()), keep32=True)
        up = sym("un_parent")
        uc = sym("un_child", up.shape[0])
        U = params("U", int((m[up] * m[uc]).sum()))
        c1off = V.get(arrays, name("c1off"), "int", shape=(S,), dtype=np.int64)
        c1 = V.get(arrays, name("c1"), "float", dtype=np.float64)
        V.check_finite(c1, name("c1"))
        V.check_spans(c1off, m, name("c1off"), c1.shape[0], allow_missing=True)
        roots = {int(a): c1[c1off[a]:c1off[a] + m[a]] for a in np.flatnonzero(c1off >= 0)}
        try:
            return cls(m, bp, bl, br, T, up, uc, U, roots)
        except ValueError as exc:
            raise ModelFileError(f"{prefix}grammar: {exc}") from None

    # ---- scoring one tree (Python; used by tests and benchmarks, not on the parsing path) ----
    def tree_weight(self, node_sym, node_left, node_right, node_leaf) -> float:
        """Weight of one derivation given as parallel node arrays in preorder (root first).

        ``node_left[i]``/``node_right[i]`` are child node indices (-1 when absent; a unary node has
        only a left child), ``node_leaf[i]`` is the emission vector of a preterminal node (None
        otherwise).  Returns ``c1_root . alpha(root)``.
        """
        n = len(node_sym)
        alpha = [None] * n
        for i in range(n - 1, -1, -1):
            a = node_sym[i]
            if node_leaf[i] is not None:
                alpha[i] = np.asarray(node_leaf[i], dtype=np.float64)
            elif node_right[i] >= 0:
                r = self.rule_index(a, node_sym[node_left[i]], node_sym[node_right[i]])
                if r < 0:
                    return 0.0
                t = self.tensor(r)
                alpha[i] = np.einsum("hij,i,j->h", t, alpha[node_left[i]], alpha[node_right[i]])
            else:
                u = self.unary_index(a, node_sym[node_left[i]])
                if u < 0:
                    return 0.0
                alpha[i] = self.unary(u) @ alpha[node_left[i]]
        c1 = self.root(node_sym[0])
        return 0.0 if c1 is None else float(c1 @ alpha[0])

    def rule_index(self, a: int, b: int, c: int) -> int:
        """Index of binary rule ``a -> b c`` or -1."""
        if not hasattr(self, "_bin_lookup"):
            self._bin_lookup = {(int(x), int(y), int(z)): r for r, (x, y, z) in enumerate(
                zip(self.bin_parent, self.bin_left, self.bin_right))}
        return self._bin_lookup.get((int(a), int(b), int(c)), -1)

    def unary_index(self, a: int, p: int) -> int:
        """Index of unary rule ``a -> p`` or -1."""
        if not hasattr(self, "_un_lookup"):
            self._un_lookup = {(int(x), int(y)): u for u, (x, y) in enumerate(
                zip(self.un_parent, self.un_child))}
        return self._un_lookup.get((int(a), int(p)), -1)


def _sort_items(items: np.ndarray) -> np.ndarray:
    """Sort chart items ``(i, j, sym)`` by (length, i, sym) and drop duplicates."""
    items = np.asarray(items, dtype=np.int32).reshape(-1, 3)
    if items.shape[0] == 0:
        return items
    order = np.lexsort((items[:, 2], items[:, 0], items[:, 1] - items[:, 0]))
    items = items[order]
    keep = np.ones(items.shape[0], dtype=bool)
    keep[1:] = np.any(items[1:] != items[:-1], axis=1)
    return np.ascontiguousarray(items[keep])


def default_threads(jobs=None) -> int:
    """Number of threads: ``jobs`` if it is a positive integer, else the cores available to
    this process (:func:`fastspectral._threads.available_cores`)."""
    if jobs is not None and jobs > 0:
        return int(jobs)
    return available_cores()


def tensor_inside_outside(grammar: LatentGrammar, lengths, items, leaf_w, leaf_off, leaf_table,
                          n_threads: int = 1):
    """Run the compiled tensor inside-outside on a batch of pruned charts.

    ``items`` is a list (one per sentence) of int32 ``(k, 3)`` arrays ``(i, j, sym)`` **already
    sorted** by :func:`_sort_items`; ``leaf_w`` / ``leaf_off`` are matching lists of per-item float64
    weights and int64 offsets into ``leaf_table`` (``-1``: the item is not a lexical leaf).  The
    inside vector of a leaf item is ``leaf_w * leaf_table[leaf_off : leaf_off + m]``.

    Returns ``(mu_list, Z, status)``: raw (unclipped) marginals per sentence, the total weight per
    sentence (in the leaves' scale), and a status per sentence (0 ok); a chart that cannot be
    allocated is a ``MemoryError`` (from the kernel, naming the sentence).
    """
    from .._ext.tensor_chart import inside_outside_batch

    g = grammar
    lens = np.ascontiguousarray(lengths, dtype=np.int32)
    ptr = np.zeros(len(items) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in items], out=ptr[1:])
    if ptr[-1] > 0:
        allit = np.concatenate(items).astype(np.int32, copy=False)
        lw = np.concatenate(leaf_w).astype(np.float64, copy=False)
        lo = np.concatenate(leaf_off).astype(np.int64, copy=False)
    else:
        allit = np.zeros((0, 3), dtype=np.int32)
        lw = np.zeros(0)
        lo = np.zeros(0, dtype=np.int64)
    mu, Z, status = inside_outside_batch(
        g.S, g.m, g.bin_parent, g.bin_left, g.bin_right, g.toff, g.T, g.rl_ptr, g.rl_rule,
        g.un_parent, g.un_child, g.uoff, g.U, g.uc_ptr, g.uc_rule, g.c1, g.c1off,
        lens, ptr, np.ascontiguousarray(allit[:, 0]), np.ascontiguousarray(allit[:, 1]),
        np.ascontiguousarray(allit[:, 2]), np.ascontiguousarray(lw), np.ascontiguousarray(lo),
        np.ascontiguousarray(leaf_table, dtype=np.float64), n_threads=n_threads)
    return [mu[ptr[s]:ptr[s + 1]] for s in range(len(items))], Z, status
