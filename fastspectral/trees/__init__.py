"""Trees and treebank readers.

``Tree`` / ``TreeArrays`` (:mod:`.tree`), PTB bracket I/O (:mod:`.ptb`), treebank transforms
(:mod:`.transforms`: clean, unary collapse, binarisation/markovisation; the symbol notation is
described there), Collins head rules (:mod:`.heads`), CoNLL dependency files (:mod:`.conll`),
Brown tagged text (:mod:`.brown`) and format detection (:mod:`.readers`).
"""
from .tree import Tree, TreeArrays
from .ptb import read_ptb, write_brackets
from .transforms import (base_label, binarize, clean, collapse_unary, debinarize, is_intermediate,
                         prepare, restore_unary, strip_function_tags, unprepare)
from .heads import HEAD_RULES, find_head, tree_to_dependencies
from .conll import DepSentence, read_conllu, read_conllx, read_malttab, write_conllu, write_conllx
from .brown import read_brown
from .readers import read_treebank

__all__ = ["Tree", "TreeArrays", "read_ptb", "write_brackets", "clean", "collapse_unary",
           "restore_unary", "binarize", "debinarize", "base_label", "is_intermediate", "prepare",
           "unprepare", "strip_function_tags", "HEAD_RULES", "find_head", "tree_to_dependencies",
           "DepSentence", "read_conllu", "read_conllx", "read_malttab", "write_conllu", "write_conllx",
           "read_brown", "read_treebank"]
