"""Toy treebanks shared by the robustness tests (kernel safety, model-file fuzzing)."""
from __future__ import annotations

import random

CLAUSES = ["(S (NP (DT the) (NN dog)) (VP (VBZ barks)))",
           "(S (NP (DT a) (NN cat)) (VP (VBZ sees) (NP (DT the) (NN dog))))",
           "(S (NP (NNS dogs)) (VP (VBP bark)))",
           "(S (NP (DT the) (NN cat)) (VP (VBZ sleeps)))"]


def coordination_treebank(k=60, seed=0, max_clauses=4):
    """Clauses joined by "and": a grammar that parses sentences of any length."""
    from fastspectral.trees.tree import Tree

    rng = random.Random(seed)
    out = []
    for _ in range(k):
        c = [rng.choice(CLAUSES) for _ in range(rng.randint(1, max_clauses))]
        inner = " (CC and) ".join(c) if len(c) > 1 else c[0][3:-1]
        out.append(Tree.fromstring(f"(TOP (S {inner} (. .)))"))
    return out


def dep_treebank():
    """Four tiny dependency sentences, each four times."""
    from fastspectral.trees.conll import DepSentence

    def sent(text, heads):
        words, tags = zip(*(w.split("/") for w in text.split()))
        return DepSentence(words=list(words), xpos=list(tags), heads=heads)

    return [sent("the/DT dog/NN barks/VBZ", [2, 3, 0]), sent("a/DT cat/NN sleeps/VBZ", [2, 3, 0]),
            sent("dogs/NNS bark/VBP", [2, 0]),
            sent("the/DT big/JJ dog/NN sleeps/VBZ", [3, 3, 4, 0])] * 4


def dep_treebank_svo():
    """:func:`dep_treebank` plus transitive sentences (a verb with a left and a right child:
    what the spectral latent dependency model needs to estimate its operators)."""
    from fastspectral.trees.conll import DepSentence

    def sent(text, heads):
        words, tags = zip(*(w.split("/") for w in text.split()))
        return DepSentence(words=list(words), xpos=list(tags), heads=heads)

    return dep_treebank() + [
        sent("the/DT dog/NN sees/VBZ a/DT cat/NN", [2, 3, 0, 5, 3]),
        sent("a/DT cat/NN sees/VBZ the/DT big/JJ dog/NN", [2, 3, 0, 6, 6, 3]),
        sent("dogs/NNS see/VBP cats/NNS", [2, 0, 2]),
        sent("the/DT cat/NN chases/VBZ dogs/NNS", [2, 3, 0, 3])] * 4
