"""PCFG estimation, lexicon and the compiled chart engine's Python surface."""
from .grammar import Grammar
from .lexicon import Lexicon, signature
from .pcfg import PCFG

__all__ = ["Grammar", "Lexicon", "PCFG", "signature"]
