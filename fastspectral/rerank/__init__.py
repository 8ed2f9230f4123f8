"""Discriminative first-order parsing, k-best lists and k-best re-ranking (Dhillon et al. 2012,
section 4): :class:`MSTParser` (McDonald et al. 2005), :func:`kbest_packed` (Huang & Chiang
2005), :class:`Reranker` and the combined model :class:`RerankDepParser`."""
from .kbest import KBest, kbest, kbest_batch, kbest_packed
from .mst import MSTParser

__all__ = ["MSTParser", "KBest", "kbest", "kbest_batch", "kbest_packed"]
