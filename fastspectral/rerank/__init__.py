"""Discriminative first-order parsing, k-best lists and k-best re-ranking (Dhillon et al. 2012,
section 4): :class:`MSTParser` (McDonald et al. 2005), :func:`kbest_packed` (Huang & Chiang
2005, Algorithm 3) and the combined model :class:`RerankDepParser` (base parser, jack-knifed
k-best lists, spectral ``log p-hat``, averaged-perceptron re-ranker)."""
from .kbest import KBest, kbest, kbest_batch, kbest_packed
from .model import RerankDepParser
from .mst import MSTParser

__all__ = ["MSTParser", "RerankDepParser", "KBest", "kbest", "kbest_batch", "kbest_packed"]
