"""The two stages of Shah et al. (2010): compiled counting and SVR-fitted shrinkage.

Notation (the paper's): tokens ``i`` with context features ``x_ij`` (the templates of
:mod:`fastspectral.lexical.features`); *targets* are the whole label and every label element (LE); for target ``m``
and a value ``k`` of it (a label, a lemma, a case ...), ``y_ik = 1`` when token ``i`` has it.

Stage 1 (:class:`Tables`)
    The univariate estimates ``beta*_jk = sum_i x_ij y_ik / sum_i x_ij`` — the relative
    frequency of value ``k`` among the tokens with feature ``j`` — for every template, target and
    value, from co-occurrence counts (one sparse count matrix per target, counted by
    ``scipy.sparse``; looked up by a compiled binary search).  The document template is the
    bag of words of the token's document, ``x_iw = 1/|W_d|`` for the word types ``w`` of the
    document: ``sum_w x_iw beta*_wk`` is the mean, over the document's words, of the share of
    value ``k`` among the training tokens of the documents that contain the word.
Candidate sets (eq. 9)
    ``C(t)``: every label seen with token ``t`` in the counted part, plus the answers of an
    analyser; tokens that neither knows get the suffix guesser's analyses.
Stage 2 (:func:`fit_lambda`)
    ``score(i, k) = sum_j lambda_j beta*_jk x_ij`` (eq. 6) with one shrinkage weight per
    template, target and frequency class of the feature (``n_j`` = 1, 2-3, 4-7, 8-15, 16+ with
    ``frequency_classes=5``: the rarer a feature, the more its estimate is shrunk), fitted by a
    linear epsilon-SVR (scikit-learn's LinearSVR, liblinear) on the rows ``(token, candidate)``
    of the second training part with target ``g(i, k) = 1`` for the gold candidate and 0 for the
    others; the prediction is ``argmax_k`` over ``C(t)``.

Kept as one module (about 960 lines): the compiled kernels of both stages, which share
the token blocks, the overlay tables and the design layout.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from .._jit import njit, prange

__all__ = ["LabelSpace", "Tables", "RankerSpec", "Ranker", "Candidates", "fit_lambda",
           "top2"]


# ------------------------------------------------------------------------------------------
# compiled kernels
# ------------------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def _lookup(indptr, indices, counts, row, v):  # pragma: no cover - numba
    lo = indptr[row]
    hi = indptr[row + 1]
    while lo < hi:
        mid = (lo + hi) >> 1
        x = indices[mid]
        if x < v:
            lo = mid + 1
        elif x > v:
            hi = mid
        else:
            return counts[mid]
    return 0


@njit(cache=True, inline="always")
def _fclass(n, n_bins):  # pragma: no cover - numba
    b = 0
    while n >= 2 and b < n_bins - 1:
        n >>= 1
        b += 1
    return b


@njit(cache=True)
def _design_kernel(F, ptr, vals, g_col, g_target, col_base, ftot, indptr, indices, counts,
                   fcount, n_bins, tok_block, width, centre, data, col,
                   rowptr):  # pragma: no cover - numba
    """The template part of the stage-2 design matrix straight into CSR arrays: for the rows
    ``ptr[j]:ptr[j+1]`` of token ``j``, beta*_g of every group ``g`` (template, target) in the
    column of its frequency class, minus the mean over the token's rows (``centre``); zeros
    are left out.  Returns the number of stored entries."""
    n_tok = ptr.shape[0] - 1
    G = g_col.shape[0]
    maxr = 0
    for j in range(n_tok):
        if ptr[j + 1] - ptr[j] > maxr:
            maxr = ptr[j + 1] - ptr[j]
    beta = np.zeros((maxr, G))
    cls = np.zeros((maxr, G), np.int64)
    k = 0
    rowptr[0] = 0
    for j in range(n_tok):
        r0 = ptr[j]
        nr = ptr[j + 1] - r0
        for g in range(G):
            for q in range(nr):
                beta[q, g] = 0.0
                cls[q, g] = 0
        for g in range(G):
            m = g_target[g]
            if centre:      # a value every candidate shares is centred away
                same = True
                for r in range(r0 + 1, r0 + nr):
                    if vals[r, m] != vals[r0, m]:
                        same = False
                        break
                if same:
                    continue
            for q in range(nr):
                r = r0 + q
                f = F[j, g_col[g]]
                v = vals[r, m]
                if f < 0 or v < 0:
                    continue
                fr = col_base[g_col[g]] + f
                n = fcount[fr]
                if n == 0:
                    continue
                c = _lookup(indptr, indices, counts, m * ftot + fr, v)
                cls[q, g] = _fclass(n, n_bins)
                beta[q, g] = c / n
        if centre and nr > 0:
            for g in range(G):
                mean = 0.0
                for q in range(nr):
                    mean += beta[q, g]
                mean /= nr
                for q in range(nr):
                    beta[q, g] -= mean
        shift = tok_block[j] * width
        for q in range(nr):
            for g in range(G):
                b = beta[q, g]
                if b > 1e-12 or b < -1e-12:
                    data[k] = b
                    col[k] = g * n_bins + cls[q, g] + shift
                    k += 1
            rowptr[r0 + q + 1] = k
    return k


@njit(cache=True, parallel=True)
def _score(F, ptr, vals, g_col, g_target, col_base, ftot, indptr, indices, counts,
           fcount, n_bins, lam, tok_block, out):  # pragma: no cover - numba
    """out[r] += sum_g lam[block, g, class] * beta*_{g}(r) (eq. 6 without materialising the
    rows) for the rows ``ptr[j]:ptr[j+1]`` of every token ``j``; ``block`` is the weight set of
    the token (known / unknown).  Only differences between a token's candidates decide its
    argmax, so a group whose value every candidate of the token shares (it adds the same to
    each) and the tokens with one candidate are skipped: the scores are eq. 6 up to a constant
    per token."""
    n_tok = ptr.shape[0] - 1
    G = g_col.shape[0]
    for j in prange(n_tok):
        r0 = ptr[j]
        r1 = ptr[j + 1]
        if r1 - r0 < 2:
            continue
        blk = tok_block[j]
        for g in range(G):
            f = F[j, g_col[g]]
            if f < 0:
                continue
            m = g_target[g]
            v0 = vals[r0, m]
            same = True
            for r in range(r0 + 1, r1):
                if vals[r, m] != v0:
                    same = False
                    break
            if same:
                continue
            fr = col_base[g_col[g]] + f
            n = fcount[fr]
            if n == 0:
                continue
            w = lam[blk, g * n_bins + _fclass(n, n_bins)]
            if w == 0.0:
                continue
            row = m * ftot + fr
            for r in range(r0, r1):
                v = vals[r, m]
                if v < 0:
                    continue
                c = _lookup(indptr, indices, counts, row, v)
                if c:
                    out[r] += w * (c / n)


@njit(cache=True)
def _doc_scores_kernel(s_ptr, s_idx, s_val, c_ptr, c_idx, c_val, nv, order, qs, vs,
                       out):  # pragma: no cover - numba
    """``out[order[t]] = (S @ C)[qs[t], vs[t]]`` (0 for a value outside ``0..nv-1``) for rows
    ``t`` sorted by query document ``qs``: one dense row of ``S @ C`` per query document,
    accumulated in the order of ``scipy.sparse``'s CSR product (over the stored entries of the
    document's row of ``S``, each adding ``S[q, d] * C[d, k]`` to column ``k``, from 0), so
    the sums are the same floating-point numbers; only the columns it touched are reset."""
    sums = np.zeros(nv)
    touched = np.zeros(nv, np.bool_)
    keys = np.empty(nv, np.int64)
    n_keys = 0
    cur = -1
    for t in range(order.shape[0]):
        q = qs[t]
        if q != cur:
            for u in range(n_keys):
                sums[keys[u]] = 0.0
                touched[keys[u]] = False
            n_keys = 0
            cur = q
            for jj in range(s_ptr[q], s_ptr[q + 1]):
                d = s_idx[jj]
                w = s_val[jj]
                for kk in range(c_ptr[d], c_ptr[d + 1]):
                    k = c_idx[kk]
                    if not touched[k]:
                        touched[k] = True
                        keys[n_keys] = k
                        n_keys += 1
                    sums[k] += w * c_val[kk]
        v = vs[t]
        out[order[t]] = sums[v] if 0 <= v < nv else 0.0


@njit(cache=True)
def _top2(ptr, scores):  # pragma: no cover - numba
    """Per group of rows ``ptr[j]:ptr[j+1]``: the rows of the best and second score (-1: none);
    ties go to the earlier row."""
    n = ptr.shape[0] - 1
    best = np.full(n, -1, np.int64)
    second = np.full(n, -1, np.int64)
    for j in range(n):
        b1 = -1
        b2 = -1
        for r in range(ptr[j], ptr[j + 1]):
            s = scores[r]
            if b1 < 0 or s > scores[b1]:
                b2 = b1
                b1 = r
            elif b2 < 0 or s > scores[b2]:
                b2 = r
        best[j] = b1
        second[j] = b2
    return best, second


@njit(cache=True)
def _distinct(ptr, values):  # pragma: no cover - numba
    """Per group ``ptr[j]:ptr[j+1]`` the distinct values in first-seen order: (new ptr,
    values)."""
    n = ptr.shape[0] - 1
    out_ptr = np.zeros(n + 1, np.int64)
    out = np.empty(values.shape[0], values.dtype)
    k = 0
    for j in range(n):
        start = k
        for r in range(ptr[j], ptr[j + 1]):
            v = values[r]
            seen = False
            for q in range(start, k):
                if out[q] == v:
                    seen = True
                    break
            if not seen:
                out[k] = v
                k += 1
        out_ptr[j + 1] = k
    return out_ptr, out[:k]


def top2(ptr, scores):
    """Best and second row of each group (see :func:`_top2`)."""
    return _top2(np.asarray(ptr, dtype=np.int64), np.asarray(scores, dtype=np.float64))


# ------------------------------------------------------------------------------------------
# labels and label-element values
# ------------------------------------------------------------------------------------------
class LabelSpace:
    """Ids of labels and of the values of every target (``label``, the LEs, optionally
    ``Morph``, the analysis without the lemma); ``lv[label, m]`` is the value id of target
    ``m`` (target 0: the label id itself)."""

    def __init__(self, scheme, with_morph: bool):
        self.scheme = scheme
        self.with_morph = with_morph
        self.target_names = ["label"] + scheme.names + (["Morph"] if with_morph else [])
        self.labels: list[tuple] = []
        self.label_index: dict = {}
        self.values: list[list] = [[] for _ in self.target_names]
        self.value_index: list[dict] = [{} for _ in self.target_names]
        self._rows: list = []
        self._lv = None

    @property
    def n_targets(self) -> int:
        return len(self.target_names)

    def target(self, name: str) -> int:
        return self.target_names.index(name)

    def value_tuple(self, label: tuple) -> tuple:
        els = self.scheme.elements(label)
        return els + ((self.scheme.morph(label),) if self.with_morph else ())

    def add(self, label: tuple) -> int:
        k = self.label_index.get(label)
        if k is not None:
            return k
        k = len(self.labels)
        self.labels.append(label)
        self.label_index[label] = k
        row = [k]
        for m, v in enumerate(self.value_tuple(label), start=1):
            idx = self.value_index[m]
            j = idx.get(v)
            if j is None:
                j = len(self.values[m])
                self.values[m].append(v)
                idx[v] = j
            row.append(j)
        self._rows.append(row)
        self._lv = None
        return k

    @property
    def lv(self) -> np.ndarray:
        if self._lv is None:
            self._lv = np.array(self._rows, dtype=np.int32).reshape(-1, self.n_targets)
        return self._lv

    def n_values(self) -> np.ndarray:
        out = [len(self.labels)] + [len(v) for v in self.values[1:]]
        return np.array(out, dtype=np.int64)

    def overlay(self) -> "Overlay":
        return Overlay(self)


class Overlay:
    """New labels and values met at prediction time, numbered after those of a
    :class:`LabelSpace` without changing it (their stage-1 estimates are 0)."""

    def __init__(self, base: LabelSpace):
        self.base = base
        self.labels: list = []
        self.label_index: dict = {}
        self.values = [[] for _ in base.target_names]
        self.value_index = [{} for _ in base.target_names]
        self.rows: list = []

    def add(self, label: tuple) -> int:
        k = self.base.label_index.get(label)
        if k is not None:
            return k
        k = self.label_index.get(label)
        if k is not None:
            return k
        k = len(self.base.labels) + len(self.labels)
        self.labels.append(label)
        self.label_index[label] = k
        row = [k]
        for m, v in enumerate(self.base.value_tuple(label), start=1):
            j = self.base.value_index[m].get(v)
            if j is None:
                j = self.value_index[m].get(v)
                if j is None:
                    j = len(self.base.values[m]) + len(self.values[m])
                    self.values[m].append(v)
                    self.value_index[m][v] = j
            row.append(j)
        self.rows.append(row)
        return k

    def lv(self) -> np.ndarray:
        base = self.base.lv
        if not self.rows:
            return base
        return np.vstack([base, np.array(self.rows, dtype=np.int32)])

    def label(self, k: int) -> tuple:
        n = len(self.base.labels)
        return self.base.labels[k] if k < n else self.labels[k - n]

    def value(self, m: int, j: int):
        n = len(self.base.values[m])
        return self.base.values[m][j] if j < n else self.values[m][j - n]


# ------------------------------------------------------------------------------------------
# stage 1: counts
# ------------------------------------------------------------------------------------------
def _csr_counts(rows, cols, shape) -> sp.csr_matrix:
    a = sp.csr_matrix((np.ones(len(rows), dtype=np.int32), (rows, cols)), shape=shape)
    a.sum_duplicates()
    a.sort_indices()
    return a


@dataclass
class Tables:
    """Stage-1 statistics of one part of the training data (see the module docstring).

    ``indptr/indices/counts``: one count matrix per target stacked by rows (row ``m * ftot +
    col_base[template] + feature``, columns = value ids); ``fcount``: tokens per feature;
    ``lex_*``: the lexicon (word id -> label ids, most frequent first); ``doc_*``: the word
    types and value counts of the documents.
    """

    col_base: np.ndarray
    ftot: int
    fcount: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    counts: np.ndarray
    lex_ptr: np.ndarray
    lex_label: np.ndarray
    lex_count: np.ndarray
    doc_words: sp.csr_matrix          # docs x words, 1 where the word occurs
    doc_tokens: np.ndarray            # tokens per document
    doc_values: dict = field(default_factory=dict)   # target -> docs x values counts

    @classmethod
    def build(cls, F, V, idx, docs, targets, doc_targets, sizes, n_values):
        """Count the tokens ``idx`` (an index array) for the targets ``targets`` (others get
        empty blocks) and the document targets ``doc_targets``."""
        idx = np.asarray(idx, dtype=np.int64)
        sizes = np.asarray(sizes, dtype=np.int64)
        col_base = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        ftot = int(sizes.sum())
        n_targets = V.shape[1]
        Fi = F[idx]
        valid = Fi >= 0
        rows = (Fi.astype(np.int64) + col_base[None, :])[valid]
        tok = np.broadcast_to(np.arange(len(idx))[:, None], Fi.shape)[valid]
        fcount = np.bincount(rows, minlength=ftot).astype(np.int32)
        # (feature, label) counts once; every target's (feature, value) counts follow from
        # them by mapping labels to values (far fewer pairs than tokens x templates)
        n_lab = int(V[idx, 0].max()) + 1 if len(idx) else 1
        pair = rows * n_lab + V[idx[tok], 0].astype(np.int64)
        upair, pcount = np.unique(pair, return_counts=True)
        prow = upair // n_lab
        plab = upair - prow * n_lab
        lab_values = np.zeros((n_lab, n_targets), dtype=np.int64)
        lab_values[V[idx, 0]] = V[idx]
        indptr_parts = [np.zeros(1, dtype=np.int64)]
        ind_parts, cnt_parts = [], []
        offset = 0
        targets = set(int(t) for t in targets)
        for m in range(n_targets):
            if m in targets:
                a = sp.csr_matrix((pcount.astype(np.int32), (prow, lab_values[plab, m])),
                                  shape=(ftot, int(n_values[m])))
                a.sum_duplicates()
                a.sort_indices()
                indptr_parts.append(a.indptr[1:].astype(np.int64) + offset)
                ind_parts.append(a.indices.astype(np.int32))
                cnt_parts.append(a.data.astype(np.int32))
                offset += a.nnz
            else:
                indptr_parts.append(np.full(ftot, offset, dtype=np.int64))
        indptr = np.concatenate(indptr_parts)
        indices = np.concatenate(ind_parts) if ind_parts else np.zeros(0, np.int32)
        counts = np.concatenate(cnt_parts) if cnt_parts else np.zeros(0, np.int32)
        # lexicon: word -> labels, most frequent first
        words = F[idx, 0].astype(np.int64)
        labels = V[idx, 0].astype(np.int64)
        lex = _csr_counts(words, labels, (int(sizes[0]), int(n_values[0])))
        row_of = np.repeat(np.arange(lex.shape[0]), np.diff(lex.indptr))
        order = np.lexsort((lex.indices, -lex.data, row_of))
        lex_label = lex.indices[order].astype(np.int32)
        lex_count = lex.data[order].astype(np.int32)
        # documents
        d = np.asarray(docs, dtype=np.int64)[idx]
        _, dloc = np.unique(d, return_inverse=True)
        n_docs = int(dloc.max()) + 1 if len(dloc) else 0
        dw = _csr_counts(dloc, words, (n_docs, int(sizes[0])))
        dw.data[:] = 1
        doc_tokens = np.bincount(dloc, minlength=n_docs).astype(np.float64)
        doc_values = {int(m): _csr_counts(dloc, V[idx, m].astype(np.int64),
                                          (n_docs, int(n_values[m])))
                      for m in doc_targets}
        return cls(col_base, ftot, fcount, indptr, indices, counts,
                   lex.indptr.astype(np.int64), lex_label, lex_count, dw, doc_tokens,
                   doc_values)

    # -- saving ----------------------------------------------------------------------------
    def to_arrays(self, prefix: str) -> dict:
        out = {"col_base": self.col_base, "fcount": self.fcount, "indptr": self.indptr,
               "indices": self.indices, "counts": self.counts, "lex_ptr": self.lex_ptr,
               "lex_label": self.lex_label, "lex_count": self.lex_count,
               "doc_words_ptr": self.doc_words.indptr, "doc_words_idx": self.doc_words.indices,
               "doc_tokens": self.doc_tokens, "ftot": np.array([self.ftot])}
        for m, a in self.doc_values.items():
            out[f"docv{m}_ptr"] = a.indptr
            out[f"docv{m}_idx"] = a.indices
            out[f"docv{m}_cnt"] = a.data
            out[f"docv{m}_shape"] = np.array(a.shape)
        return {prefix + k: v for k, v in out.items()}

    @classmethod
    def from_arrays(cls, arrays: dict, prefix: str, n_words: int, sizes=None,
                    n_values=None) -> "Tables":
        """Inverse of :meth:`to_arrays`.  With the template ``sizes`` and the targets'
        ``n_values`` (a model file) every array is checked first (:meth:`_checked_arrays`):
        a damaged one is a :class:`~fastspectral.errors.ModelFileError` naming it."""
        if sizes is not None and n_values is not None:
            return cls._checked(arrays, prefix, int(n_words), np.asarray(sizes, np.int64),
                                np.asarray(n_values, np.int64))
        g = {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}
        n_docs = len(g["doc_tokens"])
        ptr = g["doc_words_ptr"]
        dw = sp.csr_matrix((np.ones(len(g["doc_words_idx"]), dtype=np.int32),
                            g["doc_words_idx"], ptr), shape=(n_docs, n_words))
        doc_values = {}
        for k in g:
            if k.startswith("docv") and k.endswith("_ptr"):
                m = int(k[4:-4])
                shape = tuple(int(x) for x in g[f"docv{m}_shape"])
                doc_values[m] = sp.csr_matrix((g[f"docv{m}_cnt"], g[f"docv{m}_idx"],
                                               g[f"docv{m}_ptr"]), shape=shape)
        return cls(g["col_base"].astype(np.int64), int(g["ftot"][0]),
                   g["fcount"].astype(np.int32), g["indptr"].astype(np.int64),
                   g["indices"].astype(np.int32), g["counts"].astype(np.int32),
                   g["lex_ptr"].astype(np.int64), g["lex_label"].astype(np.int32),
                   g["lex_count"].astype(np.int32), dw, g["doc_tokens"].astype(np.float64),
                   doc_values)

    @classmethod
    def _checked(cls, arrays: dict, prefix: str, n_words: int, sizes: np.ndarray,
                 n_values: np.ndarray) -> "Tables":
        """:meth:`from_arrays` of a model file: every array validated against the feature
        space (``sizes``: strings per template, ``n_words = sizes[0]``) and the label space
        (``n_values``: values per target) before the compiled look-ups see it: shapes, CSR
        pointers, value / word / label ids inside their tables, sorted rows (binary search),
        counts non-negative.  O(size of the tables)."""
        from ..io import validate as V

        def get(name, kind="int", ndim=1, shape=None, dtype=np.int64):
            return V.get(arrays, prefix + name, kind, ndim=ndim, shape=shape, dtype=dtype)

        if len(sizes) == 0 or sizes[0] != n_words:
            V.fail(prefix + "col_base", "the feature space has no word template")
        n_targets = len(n_values)
        ftot = int(sizes.sum())
        get("ftot", shape=(1,))
        if int(get("ftot")[0]) != ftot:
            V.fail(prefix + "ftot", f"{int(get('ftot')[0])} where the feature space has "
                                    f"{ftot} feature strings")
        col_base = get("col_base", shape=(len(sizes),))
        want = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        if not np.array_equal(col_base, want):
            k = int(np.flatnonzero(col_base != want)[0])
            V.fail(prefix + "col_base", f"entry {k} is {col_base[k]} where the feature space "
                                        f"puts template {k} at {want[k]}")
        fcount = V.check_nonneg(get("fcount", shape=(ftot,), dtype=np.int32), prefix + "fcount")
        indptr = get("indptr", shape=(n_targets * ftot + 1,))
        indices = get("indices", dtype=np.int32)
        counts = get("counts", shape=(len(indices),), dtype=np.int32)
        V.check_offsets(indptr, prefix + "indptr", len(indices))
        V.check_nonneg(counts, prefix + "counts")
        for m in range(n_targets):          # target m: rows m * ftot .. (m + 1) * ftot
            a, b = int(indptr[m * ftot]), int(indptr[(m + 1) * ftot])
            V.check_index(indices[a:b], prefix + "indices", 0, int(n_values[m]),
                          f"from entry {a} (target {m})")
        if len(indices) > 1:                # binary-searched: each row sorted, no repeats
            unsorted = np.diff(indices) <= 0
            ends = indptr[1:-1] - 1         # the last entry of a row may exceed the next's
            unsorted[ends[(ends >= 0) & (ends < len(unsorted))]] = False
            if unsorted.any():
                k = int(np.flatnonzero(unsorted)[0])
                V.fail(prefix + "indices", f"entries {k} and {k + 1}: a row not sorted "
                                           "without repeats")
        lex_label = get("lex_label", dtype=np.int32)
        lex_ptr = V.check_offsets(get("lex_ptr", shape=(n_words + 1,)), prefix + "lex_ptr",
                                  len(lex_label))
        V.check_index(lex_label, prefix + "lex_label", 0, int(n_values[0]) if n_targets else 0)
        lex_count = V.check_nonneg(get("lex_count", shape=(len(lex_label),), dtype=np.int32),
                                   prefix + "lex_count")
        doc_tokens = V.check_nonneg(get("doc_tokens", "float", dtype=np.float64),
                                    prefix + "doc_tokens")
        n_docs = len(doc_tokens)
        dw_idx = get("doc_words_idx", dtype=np.int32)
        dw_ptr = V.check_offsets(get("doc_words_ptr", shape=(n_docs + 1,)),
                                 prefix + "doc_words_ptr", len(dw_idx))
        V.check_index(dw_idx, prefix + "doc_words_idx", 0, n_words)
        dw = sp.csr_matrix((np.ones(len(dw_idx), dtype=np.int32), dw_idx, dw_ptr),
                           shape=(n_docs, n_words))
        doc_values = {}
        groups = {}           # every docv<m>_* array: all four of its target are needed
        for k in sorted(arrays):
            if k.startswith(prefix + "docv"):
                groups.setdefault(k[len(prefix) + 4:].split("_")[0], k)
        for m, k in groups.items():
            if not m.isdigit() or int(m) >= n_targets:
                V.fail(k, f"document counts of target {m!r}, not one of the {n_targets} "
                          "targets")
            m = int(m)
            base = f"docv{m}"
            shape = get(base + "_shape", shape=(2,))
            if tuple(shape) != (n_docs, int(n_values[m])):
                V.fail(prefix + base + "_shape", f"{tuple(int(x) for x in shape)} where "
                                                 f"{(n_docs, int(n_values[m]))} is expected")
            idx = get(base + "_idx", dtype=np.int32)
            cnt = V.check_nonneg(get(base + "_cnt", shape=(len(idx),), dtype=np.int32),
                                 prefix + base + "_cnt")
            ptr = V.check_offsets(get(base + "_ptr", shape=(n_docs + 1,)), prefix + base + "_ptr",
                                  len(idx))
            V.check_index(idx, prefix + base + "_idx", 0, int(n_values[m]))
            doc_values[m] = sp.csr_matrix((cnt, idx, ptr), shape=(n_docs, int(n_values[m])))
        return cls(col_base, ftot, fcount, indptr, indices, counts, lex_ptr, lex_label,
                   lex_count, dw, doc_tokens, doc_values)

    # -- documents ---------------------------------------------------------------------------
    def doc_similarity(self, words, docs) -> tuple[sp.csr_matrix, np.ndarray]:
        """``S[q, d] = sum_w x_qw / n_w`` over the words shared by query document ``q`` and
        counted document ``d`` (``x_qw = 1/|W_q|``, ``n_w`` = counted tokens of the documents
        containing ``w``), and the query-document index of every token."""
        words = np.asarray(words, dtype=np.int64)
        _, qloc = np.unique(np.asarray(docs, dtype=np.int64), return_inverse=True)
        n_q = int(qloc.max()) + 1 if len(qloc) else 0
        known = words >= 0
        n_words = self.doc_words.shape[1]
        if not known.any() or self.doc_words.shape[0] == 0:
            return sp.csr_matrix((n_q, self.doc_words.shape[0])), qloc
        pq = _csr_counts(qloc[known], words[known], (n_q, n_words))
        pq.data[:] = 1
        sizes = np.asarray(pq.sum(axis=1)).ravel()
        pq = sp.diags(1.0 / np.maximum(sizes, 1)) @ pq.astype(np.float64)
        denom = self.doc_words.T @ self.doc_tokens
        inv = np.divide(1.0, denom, out=np.zeros_like(denom), where=denom > 0)
        s = (pq @ sp.diags(inv)) @ self.doc_words.T.astype(np.float64)
        return sp.csr_matrix(s), qloc

    def doc_scores(self, m: int, S, qdoc_rows, values, block: int = 64) -> np.ndarray:
        """``sum_w x_iw beta*_wk`` of target ``m`` for rows of query document ``qdoc_rows``
        and value ``values``."""
        out = np.zeros(len(values), dtype=np.float64)
        cm = self.doc_values.get(m)
        if cm is None or len(values) == 0 or S.shape[1] == 0:
            return out
        S = S.tocsr()
        order = np.argsort(qdoc_rows, kind="stable").astype(np.int64)
        _doc_scores_kernel(S.indptr.astype(np.int64), S.indices.astype(np.int64),
                           S.data.astype(np.float64), cm.indptr.astype(np.int64),
                           cm.indices.astype(np.int64), cm.data.astype(np.float64),
                           int(cm.shape[1]), order,
                           np.asarray(qdoc_rows, dtype=np.int64)[order],
                           np.asarray(values, dtype=np.int64)[order], out)
        return out

    def doc_scores_reference(self, m: int, S, qdoc_rows, values,
                             block: int = 64) -> np.ndarray:
        """:meth:`doc_scores` by ``scipy.sparse`` products of blocks of query documents (the
        definition the compiled kernel follows operation by operation; kept for the tests)."""
        out = np.zeros(len(values), dtype=np.float64)
        cm = self.doc_values.get(m)
        if cm is None or len(values) == 0 or S.shape[1] == 0:
            return out
        nv = cm.shape[1]
        order = np.argsort(qdoc_rows, kind="stable")
        qs = qdoc_rows[order]
        vs = np.asarray(values)[order]
        for a in range(0, S.shape[0], block):
            lo, hi = np.searchsorted(qs, [a, a + block])
            if lo == hi:
                continue
            z = np.asarray((S[a:a + block] @ cm).todense())
            v = vs[lo:hi]
            ok = (v >= 0) & (v < nv)
            res = np.zeros(hi - lo)
            res[ok] = z[qs[lo:hi][ok] - a, v[ok]]
            out[order[lo:hi]] = res
        return out


# ------------------------------------------------------------------------------------------
# candidates and rankers
# ------------------------------------------------------------------------------------------
@dataclass
class Candidates:
    """Candidate rows of a corpus: token ``j`` owns rows ``ptr[j]:ptr[j+1]`` of ``label``
    (label ids of an :class:`Overlay`); ``lv`` the value ids of every row; ``known[j]``:
    the candidates came from the lexicon (else from an analyser or the guesser)."""

    ptr: np.ndarray
    label: np.ndarray
    lv: np.ndarray
    overlay: Overlay
    known: np.ndarray
    #: rows added by ``known_guesses`` (guessed inflections of known tokens), or None
    inflected: np.ndarray | None = None
    #: per token, with tags given: the token had a tag that none of its candidates carries
    #: (every candidate kept), or None
    tag_unmatched: np.ndarray | None = None

    def without_inflections(self) -> "Candidates":
        """The same candidates without the rows of ``inflected`` (what ``known_guesses=False``
        builds)."""
        if self.inflected is None or not self.inflected.any():
            return self
        keep = ~self.inflected
        row_tok = np.repeat(np.arange(len(self.ptr) - 1), np.diff(self.ptr))
        counts = np.bincount(row_tok[keep], minlength=len(self.ptr) - 1)
        ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        return Candidates(ptr, self.label[keep], np.ascontiguousarray(self.lv[keep]),
                          self.overlay, self.known, np.zeros(int(keep.sum()), dtype=bool),
                          self.tag_unmatched)

    def values(self, m: int) -> tuple[np.ndarray, np.ndarray]:
        """The distinct values of target ``m`` per token: ``(ptr, value ids)``."""
        return _distinct(self.ptr, np.ascontiguousarray(self.lv[:, m]))


@dataclass
class RankerSpec:
    """One scoring model: ``level`` -1 ranks labels, ``m >= 1`` ranks the values of target m;
    ``targets`` are the targets whose stage-1 estimates it uses (with every string template),
    ``doc_targets`` those with the document template; ``uniform``: every lambda is 1 (no stage
    2); ``blocks``: 2 for separate weights for the tokens the lexicon knows and the others."""

    name: str
    level: int
    targets: tuple
    doc_targets: tuple = ()
    uniform: bool = False
    blocks: int = 1


@dataclass
class Ranker:
    """A fitted :class:`RankerSpec`: ``lam`` (block x group x frequency class), ``lam_doc``
    (block x document target), ``intercept``, the chosen ``C``, the stage-2 rows, the chosen
    ``epsilon`` (one per block, like ``C``)."""

    spec: RankerSpec
    lam: np.ndarray
    lam_doc: np.ndarray
    intercept: float = 0.0
    C: float | None = None
    rows: int = 0
    epsilon: list | None = None


def groups(spec: RankerSpec, cols):
    """``(g_col, g_target)``: every template column of ``cols`` for every target of
    ``spec``."""
    g_col = np.array([c for _ in spec.targets for c in cols], dtype=np.int64)
    g_target = np.array([m for m in spec.targets for _ in cols], dtype=np.int64)
    return g_col, g_target


def row_values(cands: Candidates, level: int, n_targets: int):
    """``(ptr, vals)`` of the rows a ranker scores: candidate labels (level -1) or the distinct
    values of target ``level``; ``vals`` holds the value ids of every target (-1 where a row
    of values has none)."""
    if level < 0:
        return cands.ptr.astype(np.int64), np.ascontiguousarray(cands.lv, dtype=np.int32)
    ptr, v = cands.values(level)
    vals = np.full((len(v), n_targets), -1, dtype=np.int32)
    vals[:, level] = v
    return ptr, vals


def token_blocks(spec: RankerSpec, known) -> np.ndarray:
    """The weight set of every token: 0, or 1 for tokens outside the lexicon when the spec
    has two blocks."""
    known = np.asarray(known, dtype=bool)
    if spec.blocks == 1:
        return np.zeros(len(known), dtype=np.int64)
    return (~known).astype(np.int64)


def _centre(values: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    """``values`` (rows x columns, or rows) minus the mean of its token's rows."""
    counts = np.diff(ptr)
    sums = np.add.reduceat(values, ptr[:-1], axis=0) if len(values) else values
    means = sums / counts.reshape((-1,) + (1,) * (values.ndim - 1))
    return values - np.repeat(means, counts, axis=0)


def design(tables: Tables, F, cols, ptr, vals, spec: RankerSpec, n_bins: int, S, qloc,
           tok_block, centre: bool = True):
    """The stage-2 design matrix of rows ``(token, candidate)``: per weight block, columns
    ``group x frequency class`` then one per document target.

    ``centre``: every column minus its mean over the token's rows.  The argmax of eq. 6 within a
    token does not change (a token's rows share their features, so the shift is the same for
    every candidate), the regression sees only what tells the candidates apart, and the
    estimates every candidate of a token shares (an LE on which they agree) drop out of the
    sparse matrix."""
    g_col, g_target = groups(spec, cols)
    ptr = np.asarray(ptr, dtype=np.int64)
    row_tok = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr)).astype(np.int64)
    R, G = len(row_tok), len(g_col)
    D = len(spec.doc_targets)
    width = G * n_bins + D
    shape = (R, spec.blocks * width)
    tok_block = np.asarray(tok_block, dtype=np.int64)
    data = np.empty(R * G, dtype=np.float64)
    colx = np.empty(R * G, dtype=np.int32)
    rowptr = np.empty(R + 1, dtype=np.int64)
    nnz = _design_kernel(np.ascontiguousarray(F), ptr, np.ascontiguousarray(vals), g_col,
                         g_target, tables.col_base, tables.ftot, tables.indptr, tables.indices,
                         tables.counts, tables.fcount, n_bins, tok_block, width, bool(centre),
                         data, colx, rowptr)
    X = sp.csr_matrix((data[:nnz].copy(), colx[:nnz].copy(), rowptr), shape=shape)
    if D and R:
        doc = np.column_stack([tables.doc_scores(m, S, qloc[row_tok], vals[:, m])
                               for m in spec.doc_targets])
        if centre:
            doc = _centre(doc, ptr)
        shift = tok_block[row_tok] * width
        nzd = np.abs(doc) > 1e-12
        d_r, d_k = np.nonzero(nzd)
        X = X + sp.csr_matrix((doc[nzd], (d_r, G * n_bins + d_k + shift[d_r])), shape=shape)
    return X


def unpack(spec: RankerSpec, coef, n_cols: int, n_bins: int):
    """``(lam, lam_doc)`` of a coefficient vector of :func:`design`'s columns."""
    G = n_cols * len(spec.targets)
    D = len(spec.doc_targets)
    c = np.asarray(coef, dtype=np.float64).reshape(spec.blocks, G * n_bins + D)
    return np.ascontiguousarray(c[:, :G * n_bins]), np.ascontiguousarray(c[:, G * n_bins:])


def uniform_weights(spec: RankerSpec, n_cols: int, n_bins: int):
    G = n_cols * len(spec.targets)
    return (np.ones((spec.blocks, G * n_bins)),
            np.ones((spec.blocks, len(spec.doc_targets))))


def score(tables: Tables, F, cols, ptr, vals, ranker: Ranker, n_bins: int, S, qloc,
          tok_block, threads: int | None = None):
    """eq. 6 for every row (compiled, parallel over rows on ``threads`` threads; no design
    matrix)."""
    spec = ranker.spec
    g_col, g_target = groups(spec, cols)
    ptr = np.asarray(ptr, dtype=np.int64)
    row_tok = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr)).astype(np.int64)
    out = np.full(len(row_tok), ranker.intercept, dtype=np.float64)
    lam = np.ascontiguousarray(np.asarray(ranker.lam, dtype=np.float64).reshape(spec.blocks, -1))
    with _numba_threads(threads):
        _score(np.ascontiguousarray(F), ptr, np.ascontiguousarray(vals), g_col, g_target,
               tables.col_base, tables.ftot, tables.indptr, tables.indices, tables.counts,
               tables.fcount, n_bins, lam, np.asarray(tok_block, dtype=np.int64), out)
    lam_doc = np.asarray(ranker.lam_doc, dtype=np.float64).reshape(spec.blocks, -1)
    rb = tok_block[row_tok]
    for k, m in enumerate(spec.doc_targets):
        w = lam_doc[rb, k]
        if np.any(w):
            out += w * tables.doc_scores(m, S, qloc[row_tok], vals[:, m])
    return out


class _numba_threads:
    """Numba's thread count limited to ``n`` inside the block (None: unchanged)."""

    def __init__(self, n):
        self.n = n
        self.old = None

    def __enter__(self):
        if self.n is not None:
            import numba
            try:
                self.old = numba.get_num_threads()
                numba.set_num_threads(max(1, min(int(self.n), numba.config.NUMBA_NUM_THREADS)))
            except Exception:   # numba without a threading layer
                self.old = None
        return self

    def __exit__(self, *exc):
        if self.old is not None:
            import numba
            numba.set_num_threads(self.old)
        return False


def _accuracy(ptr, y, scores) -> float:
    """Share of tokens whose best-scored row has the highest target of the token."""
    best, _ = top2(ptr, scores)
    ok = best >= 0
    if not ok.any():
        return 0.0
    top = np.maximum.reduceat(y, ptr[:-1])
    return float(np.mean(y[best[ok]] >= top[ok] - 1e-12))


#: the SVR losses: liblinear's L2-loss SVR (primal trust-region Newton) and L1-loss SVR (dual
#: coordinate descent)
LOSSES = ("squared_epsilon_insensitive", "epsilon_insensitive")


def _svr(X, y, C, epsilon, max_iter, random_state, loss="squared_epsilon_insensitive"):
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVR

    svr = LinearSVR(C=C, epsilon=epsilon, loss=loss, fit_intercept=True,
                    dual=loss == "epsilon_insensitive", max_iter=max_iter,
                    random_state=random_state, tol=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        svr.fit(X, y)
    return svr.coef_.astype(np.float64), float(svr.intercept_[0])


#: the values of C tried when ``C=None`` (chosen on a held-out half of the stage-2 rows)
C_GRID = (0.01, 0.1, 1.0)
#: the values of epsilon tried when ``epsilon=None`` (with every C of the grid)
EPSILON_GRID = (0.0, 0.1)


def token_rows(ptr, toks):
    """Rows and the new ``ptr`` of the tokens ``toks``."""
    n = np.diff(ptr)[toks]
    rows = np.repeat(ptr[toks], n) + (np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n))
    return rows, np.concatenate([[0], np.cumsum(n)]).astype(np.int64)


#: at most this many tokens of each half fit and score the grid of ``C`` values
SELECTION_TOKENS = 3000


def fit_lambda(X, y, ptr, C, epsilon, max_iter, random_state,
               loss="squared_epsilon_insensitive"):
    """Stage 2: the shrinkage weights of eq. 6 by linear epsilon-SVR on rows ``X`` with target
    ``y`` (both centred within each token, see :func:`design`); ``ptr`` groups the rows by
    token.  ``C=None`` / ``epsilon=None``: every pair of :data:`C_GRID` x :data:`EPSILON_GRID`
    (or the given value) is fitted on the first half of the tokens and the pair with the best
    first-choice accuracy on the second half kept (ties: the smaller C, then the smaller
    epsilon; at most :data:`SELECTION_TOKENS` tokens of each half, drawn with
    ``random_state``) — an inner split of the training data, never test data — then refitted
    on all rows.  Returns ``(coef, intercept, C, epsilon)``."""
    ptr = np.asarray(ptr, dtype=np.int64)
    y = _centre(np.asarray(y, dtype=np.float64), ptr)
    cs = C_GRID if C is None else (C,)
    eps = EPSILON_GRID if epsilon is None else (epsilon,)
    if len(cs) * len(eps) > 1:
        n_tok = len(ptr) - 1
        half = n_tok // 2
        if half >= 1 and n_tok - half >= 1:
            rng = np.random.default_rng(random_state)
            ta = np.arange(half)
            tb = np.arange(half, n_tok)
            if len(ta) > SELECTION_TOKENS:
                ta = np.sort(rng.choice(ta, SELECTION_TOKENS, replace=False))
            if len(tb) > SELECTION_TOKENS:
                tb = np.sort(rng.choice(tb, SELECTION_TOKENS, replace=False))
            ra, _ = token_rows(ptr, ta)
            rb, pb = token_rows(ptr, tb)
            Xa, ya, Xb, yb = X[ra], y[ra], X[rb], y[rb]
            best = None
            for c in cs:
                for e in eps:
                    coef, b = _svr(Xa, ya, c, e, max_iter, random_state, loss)
                    acc = _accuracy(pb, yb, Xb @ coef + b)
                    if best is None or acc > best[0] + 1e-12:
                        best = (acc, c, e)
            C, epsilon = best[1], best[2]
        else:
            C, epsilon = cs[-1] if C is None else C, eps[0]
    else:
        C, epsilon = cs[0], eps[0]
    coef, b = _svr(X, y, C, epsilon, max_iter, random_state, loss)
    return coef, b, C, epsilon
