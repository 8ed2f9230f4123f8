"""Unsupervised constituency parsing: the additive-tree-metric parser (Parikh, Cohen & Xing
2014), the constituent-context model (Klein & Manning 2002) and the branching baselines."""
from .atm import ATMParser
from .ccm import CCMParser, branching_tree, random_tree

__all__ = ["ATMParser", "CCMParser", "branching_tree", "random_tree"]
