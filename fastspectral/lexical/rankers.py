"""The rankers of stage 2 of the lexical disambiguator: their specifications per variant, the
stage-2 rows (targets ``g(i, k)``, graded or 0/1) and the fit of one ranker (its two weight
sets, the lambdas of :mod:`fastspectral.lexical.engine`).
"""
from __future__ import annotations


import numpy as np
import scipy.sparse as sp

from . import engine as E

__all__ = ["variant_rankers"]


def _specs(space: E.LabelSpace, names) -> list:
    """The ranker specifications of the models ``names`` (``M_full``, ``M_uni``,
    ``M_baseline``, ``M_e:<LE>``, ``M_morph``)."""
    les = tuple(range(1, 1 + len(space.scheme.names)))
    lemma = space.target("Lemma")
    out = []
    for name in names:
        if name == "M_full":
            out.append(E.RankerSpec(name, -1, (0,) + les, (0, lemma)))
        elif name == "M_uni":
            out.append(E.RankerSpec(name, -1, (0,) + les, (0, lemma), uniform=True))
        elif name == "M_baseline":
            out.append(E.RankerSpec(name, -1, (0,), (0,)))
        elif name == "M_morph":
            m = space.target("Morph")
            out.append(E.RankerSpec(name, m, (m,), ()))
        elif name.startswith("M_e:"):
            m = space.target(name[4:])
            out.append(E.RankerSpec(name, m, (m,), (m,) if m == lemma else ()))
        else:  # pragma: no cover - internal
            raise KeyError(name)
    return out


def variant_rankers(variant: str) -> tuple:
    """The rankers a variant needs."""
    return {"full": ("M_full",), "uni": ("M_uni",), "baseline": ("M_baseline",),
            "ind": ("M_e:Lemma", "M_morph"), "unigram": ()}[variant]


def _check_choice(name, value, choices):
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, not {value!r}")
    return value


def _graded_value(graded):
    """``graded`` as "no", "unknown" or "all" (True: "all"; False / None: "no")."""
    if graded is True:
        return "all"
    if graded is False or graded is None:
        return "no"
    return _check_choice("graded", graded, ("no", "unknown", "all"))


def _stage2_rows(cands: E.Candidates, level: int, gold_lv: np.ndarray, n_targets: int,
                 graded, n_les: int):
    """Stage-2 rows: ``(token index, ptr, vals, g)`` of the tokens with two candidates or more
    whose targets ``g(i, k)`` differ: 1 for the gold candidate and 0 for the others, or
    (``graded``, label rankers) the share of the ``n_les`` label elements a candidate shares
    with the gold label; ``graded="unknown"``: graded for the tokens outside the lexicon
    (``"all"`` or True: every token; ``"no"``, False or None: 0/1)."""
    graded = _graded_value(graded)
    ptr, vals = E.row_values(cands, level, n_targets)
    col = 0 if level < 0 else level
    tok_of_row = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    gold = gold_lv[tok_of_row]
    y = (vals[:, col] == gold[:, col]).astype(np.float64)
    if graded != "no" and level < 0 and n_les:
        share = (vals[:, 1:1 + n_les] == gold[:, 1:1 + n_les]).mean(axis=1)
        use = np.ones(len(y), dtype=bool) if graded == "all" else ~cands.known[tok_of_row]
        y[use] = np.maximum(y[use], share[use])
    graded_tok = np.zeros(len(ptr) - 1, dtype=bool)
    if graded != "no" and level < 0 and n_les:
        graded_tok[:] = True if graded == "all" else ~cands.known
    n_rows = np.diff(ptr)
    n_tok = len(ptr) - 1
    hi = np.full(n_tok, -np.inf)
    lo = np.full(n_tok, np.inf)
    has = n_rows > 0            # a token's rows are contiguous: reduce them in one pass
    if has.any():
        starts = ptr[:-1][has]
        hi[has] = np.maximum.reduceat(y, starts)
        lo[has] = np.minimum.reduceat(y, starts)
    ok = (n_rows >= 2) & (hi > lo)
    n_hit = np.bincount(tok_of_row, weights=(y == 1.0), minlength=n_tok)
    ok &= graded_tok | (n_hit == 1)
    keep_tok = np.nonzero(ok)[0]
    keep_row = ok[tok_of_row]
    new_ptr = np.concatenate([[0], np.cumsum(n_rows[keep_tok])]).astype(np.int64)
    return keep_tok, new_ptr, np.ascontiguousarray(vals[keep_row]), y[keep_row]


def _digest(*parts) -> bytes:
    """A 128-bit digest of arrays (dtype, shape and bytes) and plain values: the key of the
    inner fits' memo (:func:`_fit_ranker`'s ``memo``)."""
    import hashlib

    h = hashlib.blake2b(digest_size=16)
    for p in parts:
        if isinstance(p, np.ndarray):
            a = np.ascontiguousarray(p)
            h.update(repr((a.dtype.str, a.shape)).encode())
            h.update(memoryview(a).cast("B"))
        else:
            h.update(repr(p).encode())
        h.update(b"\x00")
    return h.digest()


def _per_block(value, blk):
    """``C`` or ``epsilon`` of weight set ``blk``: ``value`` itself, or its entry ``blk`` of
    a list (the first entry beyond its end)."""
    if isinstance(value, list):
        return value[blk] if blk < len(value) else value[0]
    return value


def _fit_ranker(spec, dirs, space, cols, n_bins, graded, n_les, C, epsilon, max_iter,
                random_state, loss, stage2_tokens, use=None, memo=None):
    """Stage 2 of one ranker on the rows of the directions ``dirs`` (``(tables, guesser, F,
    candidates, S, qloc, gold values)`` of each): ``(Ranker or None, stage-2 rows)``.
    ``use``: per direction a boolean mask of the tokens that may give stage-2 rows (None:
    all).  ``C`` / ``epsilon``: a number, None (the grid of :func:`E.fit_lambda`) or one
    of these per weight set (a list; a block beyond its end takes its first entry).

    ``memo``: a dict shared by fits on the same ``dirs`` (the inner choices): a design matrix
    is keyed by its direction and a digest of its inputs (tokens, candidate values, row
    groups), a weight set's fit by the keys of its pieces, its targets and the SVR's
    settings — the settings compared on the inner split often leave a weight set's rows as
    they are (``graded`` changes only the targets of tokens outside the lexicon, which have
    their own weight set; with every stage-2 token known, ``unknown_weights`` changes nothing),
    and those fits are then taken from the memo, not repeated (the same inputs give the same
    weights)."""
    one = E.RankerSpec(spec.name, spec.level, spec.targets, spec.doc_targets, spec.uniform, 1)
    lam, lam_doc = E.uniform_weights(spec, len(cols), n_bins)
    pieces = [[] for _ in range(spec.blocks)]
    n_rows = 0
    for d, (tab, _, Fr, cands, S, qloc, gold_lv) in enumerate(dirs):
        keep, ptr, vals, y = _stage2_rows(cands, spec.level, gold_lv, space.n_targets,
                                          graded, n_les)
        if use is not None:
            sub = np.nonzero(use[d][keep])[0]
            rows, ptr = E.token_rows(ptr, sub)
            keep, vals, y = keep[sub], vals[rows], y[rows]
        blocks = E.token_blocks(spec, cands.known[keep])
        for blk in range(spec.blocks):
            sel = np.nonzero(blocks == blk)[0]
            cap = None if stage2_tokens is None else -(-int(stage2_tokens) // len(dirs))
            if cap is not None and len(sel) > cap:
                rng = np.random.default_rng([random_state or 0, blk, d])
                sel = np.sort(rng.choice(sel, cap, replace=False))
            if len(sel) == 0:
                continue
            rows, p2 = E.token_rows(ptr, sel)
            v = np.ascontiguousarray(vals[rows])
            key = None if memo is None else \
                ("design", d, _digest(keep[sel], v, p2, one.targets, one.doc_targets, n_bins,
                                      tuple(cols)))
            X = None if key is None else memo.get(key)
            if X is None:
                X = E.design(tab, np.ascontiguousarray(Fr[keep[sel]]), cols, p2, v, one,
                             n_bins, S, qloc[keep[sel]], np.zeros(len(sel), np.int64))
                if key is not None:
                    memo[key] = X
            pieces[blk].append((X, y[rows], p2, len(sel), key))
            n_rows += len(rows)
    cs, es, b = [], [], 0.0
    for blk in range(spec.blocks):
        if sum(pc[3] for pc in pieces[blk]) < 2:
            cs.append(None)
            es.append(None)
            continue
        y = np.concatenate([pc[1] for pc in pieces[blk]])
        offs = np.cumsum([0] + [pc[2][-1] for pc in pieces[blk]])
        p2 = np.concatenate([pieces[blk][0][2][:1]] +
                            [pc[2][1:] + o for pc, o in zip(pieces[blk], offs)])
        c_b, e_b = _per_block(C, blk), _per_block(epsilon, blk)
        key = None if memo is None else \
            ("fit", tuple(pc[4] for pc in pieces[blk]), _digest(y, p2), c_b, e_b, max_iter,
             random_state, loss)
        fitted = None if key is None else memo.get(key)
        if fitted is None:
            X = sp.vstack([pc[0] for pc in pieces[blk]]).tocsr()
            fitted = E.fit_lambda(X, y, p2, c_b, e_b, max_iter, random_state, loss)
            if key is not None:
                memo[key] = fitted
                # the last fit of a grid is the fit with the chosen pair: the same weights
                memo[key[:3] + (fitted[2], fitted[3]) + key[5:]] = fitted
        coef, b_blk, c, e = fitted
        lb, ld = E.unpack(one, coef, len(cols), n_bins)
        lam[blk], lam_doc[blk] = lb[0], ld[0]
        cs.append(c)
        es.append(e)
        if blk == 0:
            b = b_blk
    if not any(c is not None for c in cs):
        return None, n_rows
    return E.Ranker(spec, lam, lam_doc, b, cs, n_rows, es), n_rows
