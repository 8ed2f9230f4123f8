"""Tests of UAS / LAS scoring (fastspectral.eval.attachment)."""
from dataclasses import dataclass, field

import pytest
from conftest import data_path, need

from fastspectral.errors import FormatError
from fastspectral.eval.attachment import (attachment_scores, evaluate_dependency_files,
                                          is_punct_word, is_punctuation)


@dataclass
class Sent:
    """A minimal duck-typed sentence (the scorer must not need DepSentence)."""

    words: list
    heads: list
    rels: list | None = None
    tags: list = field(default_factory=list)

    def __post_init__(self):
        if not self.tags:
            self.tags = ["X"] * len(self.words)


# "The dog barked loudly ." : The<-dog, dog<-barked, barked root, loudly<-barked, .<-barked
GOLD1 = Sent(["The", "dog", "barked", "loudly", "."], [2, 3, 0, 3, 3],
             ["det", "nsubj", "root", "advmod", "punct"], ["DT", "NN", "VBD", "RB", "."])
# "Cats , too , sleep" with PTB commas
GOLD2 = Sent(["Cats", ",", "too", ",", "sleep"], [5, 1, 1, 1, 0],
             ["nsubj", "punct", "advmod", "punct", "root"], ["NNS", ",", "RB", ",", "VBP"])


def test_perfect_scores():
    r = attachment_scores([GOLD1, GOLD2], [GOLD1, GOLD2])
    assert r.uas == r.las == 100.0
    assert r.n_sentences == 2 and r.n_punct == 3
    assert r.n_tokens == 7 and r.with_punct.n_tokens == 10
    assert r.selected.ucm == 100.0


def test_known_uas_las():
    # sentence 1: 'loudly' gets a wrong head, 'dog' a wrong label, '.' a wrong head
    p1 = Sent(GOLD1.words, [2, 3, 0, 2, 2], ["det", "obj", "root", "advmod", "punct"])
    # sentence 2: 'too' head wrong, a comma head wrong
    p2 = Sent(GOLD2.words, [5, 1, 5, 3, 0], ["nsubj", "punct", "advmod", "punct", "root"])
    r = attachment_scores([GOLD1, GOLD2], [p1, p2])                  # punct excluded
    # non-punct tokens: The dog barked loudly | Cats too sleep  = 7
    # heads right: The dog barked | Cats sleep = 5 ; labelled right: The barked | Cats sleep = 4
    assert r.n_tokens == 7
    assert r.correct_heads == 5 and r.correct_labeled == 4
    assert r.uas == pytest.approx(500 / 7) and r.las == pytest.approx(400 / 7)
    assert r.selected.ucm == 0.0
    ri = attachment_scores([GOLD1, GOLD2], [p1, p2], punct="include")
    # all 10 tokens: heads right 5 + ',' (1st) = 6 ; labelled 4 + ',' = 5
    assert ri.n_tokens == 10 and ri.correct_heads == 6 and ri.correct_labeled == 5
    assert ri.uas == 60.0 and ri.las == 50.0
    # both variants are always there
    assert ri.without_punct == r.without_punct and ri.with_punct == r.with_punct
    rep = r.report()
    assert "with punctuation" in rep and "without punctuation" in rep
    assert " 71.43 " in rep and " 57.14 " in rep and " 60.00 " in rep and " 50.00 " in rep


def test_unlabelled_corpus_has_no_las():
    g = Sent(["a", "b"], [2, 0], None)
    p = Sent(["a", "b"], [0, 0], ["x", "y"])
    r = attachment_scores([g], [p])
    assert r.uas == 50.0 and r.las is None
    g2 = Sent(["a", "b"], [2, 0], ["_", "_"])
    assert attachment_scores([g2], [p]).las is None
    assert "n/a" in r.report()
    # gold labelled, prediction without labels: labelled score is 0
    g3 = Sent(["a", "b"], [2, 0], ["dep", "root"])
    r3 = attachment_scores([g3], [Sent(["a", "b"], [2, 0], None)])
    assert r3.uas == 100.0 and r3.las == 0.0


def test_punctuation_rule():
    assert is_punct_word(".") and is_punct_word("...") and is_punct_word("--")
    assert is_punct_word("«") and is_punct_word("(") and is_punct_word("#")
    assert not is_punct_word("$") and not is_punct_word("+") and not is_punct_word("")
    assert not is_punct_word("U.S.") and not is_punct_word("a.")
    assert is_punctuation("word", ":") and is_punctuation("x", "PUNCT")
    assert is_punctuation("x", "NN", upos="PUNCT")
    for tag in ["-LRB-", "-RRB-", "#", "$"]:
        assert not is_punctuation("abc", tag)
    # '$' token is not punctuation; '-LRB-' word is not punctuation but '(' is
    g = Sent(["$", "5", "-LRB-", "("], [2, 0, 2, 2], tags=["$", "CD", "-LRB-", "-LRB-"])
    p = Sent(g.words, [0, 0, 0, 0])
    r = attachment_scores([g], [p])
    assert r.n_punct == 1 and r.n_tokens == 3 and r.correct_heads == 1
    # custom tag set: only the word rule remains with ()
    g2 = Sent(["x", "y"], [0, 1], tags=["NN", ":"])
    assert attachment_scores([g2], [g2]).n_punct == 1
    assert attachment_scores([g2], [g2], punct_tags=()).n_punct == 0
    assert attachment_scores([g2], [g2], punct_tags=["NN"]).n_punct == 1


def test_upos_attribute_is_used():
    @dataclass
    class UD(Sent):
        upos: list = field(default_factory=list)
    g = UD(["a", "-"], [0, 1], None, ["NN", "HYPH"], ["NOUN", "PUNCT"])
    g2 = UD(["a", "b"], [0, 1], None, ["NN", "HYPH"], ["NOUN", "PUNCT"])
    assert attachment_scores([g], [g]).n_punct == 1
    assert attachment_scores([g2], [g2]).n_punct == 1     # by upos alone


def test_alignment_errors_name_sentence():
    with pytest.raises(FormatError, match="sentence 2"):
        attachment_scores([GOLD1, GOLD2], [GOLD1, Sent(GOLD2.words[:4], [0, 1, 1, 1])])
    with pytest.raises(FormatError, match=r"sentence 1, word 2"):
        attachment_scores([GOLD1], [Sent(["The", "cat", "barked", "loudly", "."], GOLD1.heads)])
    with pytest.raises(FormatError, match="2 sentences"):
        attachment_scores([GOLD1, GOLD2], [GOLD1], pred_path="p.conllu")
    with pytest.raises(FormatError, match="head"):
        attachment_scores([GOLD1], [Sent(GOLD1.words, [2, 3, 0, 3, 9])])
    with pytest.raises(ValueError):
        attachment_scores([GOLD1], [GOLD1], punct="maybe")


CONLLU_GOLD = """# sent_id = 1
1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_
2\tdog\tdog\tNOUN\tNN\t_\t3\tnsubj\t_\t_
3\tbarked\tbark\tVERB\tVBD\t_\t0\troot\t_\t_
4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_

# sent_id = 2
1\tHi\thi\tINTJ\tUH\t_\t0\troot\t_\t_
2\t!\t!\tPUNCT\t.\t_\t1\tpunct\t_\t_

"""


def test_evaluate_dependency_files(tmp_path):
    pytest.importorskip("fastspectral.trees.readers")
    g = tmp_path / "gold.conllu"
    p = tmp_path / "pred.conllu"
    g.write_text(CONLLU_GOLD)
    p.write_text(CONLLU_GOLD.replace("2\tdog\tdog\tNOUN\tNN\t_\t3\tnsubj",
                                     "2\tdog\tdog\tNOUN\tNN\t_\t3\tobj")
                 .replace("1\tThe\tthe\tDET\tDT\t_\t2", "1\tThe\tthe\tDET\tDT\t_\t3"))
    r = evaluate_dependency_files(g, p)
    assert r.n_sentences == 2 and r.n_punct == 2 and r.n_tokens == 4
    assert r.uas == 75.0 and r.las == 50.0
    assert r.with_punct.uas == pytest.approx(100 * 5 / 6)
    p.write_text(CONLLU_GOLD.split("\n\n")[0] + "\n\n")
    with pytest.raises(FormatError) as ei:
        evaluate_dependency_files(g, p)
    assert ei.value.path == str(g)


@pytest.mark.slow
def test_shared_treebank_against_itself():
    path = need(data_path("dep", "wsj-sample.dp"))
    pytest.importorskip("fastspectral.trees.readers")
    r = evaluate_dependency_files(path, path)
    assert r.uas == 100.0 and r.las is None and r.n_sentences == 3914
    assert r.with_punct.n_tokens == 94084 and 0 < r.n_punct < 94084 // 5
