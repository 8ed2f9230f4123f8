"""Test-only reference implementations for the L-PCFG learners.

:func:`brute_force_counts` is the E-step of EM by enumeration of every joint latent assignment of
every (tiny) tree: the reference of the compiled :func:`fastspectral.lpcfg.latent_params.e_step`.
"""
import itertools
import math

import numpy as np

from fastspectral.lpcfg.latent_params import EStep


def brute_force_counts(layout, params) -> EStep:
    """Reference E-step: enumerate every joint latent assignment of every (tiny) tree.

    Returns an :class:`~fastspectral.lpcfg.latent_params.EStep` like
    :func:`~fastspectral.lpcfg.latent_params.e_step`.  Exponential in the number of nodes:
    tests only.
    """
    lay = layout
    counts = lay.zeros()
    total_ll = 0.0
    per_tree = np.zeros(lay.n_trees)
    for tree in range(lay.n_trees):
        n0, n1 = int(lay.tree_ptr[tree]), int(lay.tree_ptr[tree + 1])
        nodes = list(range(n0, n1))
        sizes = [int(lay.m[lay.label[n]]) for n in nodes]
        acc = lay.zeros()
        total = 0.0
        for hs in itertools.product(*[range(k) for k in sizes]):
            st = dict(zip(nodes, hs))
            a = lay.label[n0]
            w = params.c1[lay.soff[a] + st[n0]]
            idx = [("c1", lay.soff[a] + st[n0])]
            for n in nodes:
                if lay.lexrow[n] >= 0:
                    i = lay.loff[lay.lexrow[n]] + st[n]
                    w *= params.L[i] * math.exp(lay.leaflogp[n])
                    idx.append(("L", i))
                    continue
                mb = lay.m[lay.label[lay.left[n]]]
                if lay.right[n] >= 0:
                    mc = lay.m[lay.label[lay.right[n]]]
                    i = lay.toff[lay.rule[n]] + (st[n] * mb + st[lay.left[n]]) * mc \
                        + st[lay.right[n]]
                    w *= params.T[i]
                    idx.append(("T", i))
                else:
                    i = lay.uoff[lay.urule[n]] + st[n] * mb + st[lay.left[n]]
                    w *= params.U[i]
                    idx.append(("U", i))
            total += w
            for name, i in idx:
                getattr(acc, name)[i] += w
        per_tree[tree] = math.log(total)
        total_ll += per_tree[tree]
        for name in ("T", "U", "L", "c1"):
            getattr(counts, name)[:] += getattr(acc, name) / total
    return EStep(counts, total_ll, per_tree)
