# Wrote the model files of this folder with fastspectral at commit c0b8fe6 (before the issue-10
# reshaping); tests/test_legacy_models.py checks that they still load and give the same results.
# Run from the repository root with ../shared/data present.
import hashlib, json, itertools, os
from fastspectral.synthetic import LatentPCFG
from fastspectral.grammar.pcfg import PCFG
from fastspectral.lpcfg import SpectralLPCFG, PivotLPCFG, EMLPCFG
from fastspectral.dependency.model import SHAGParser
from fastspectral.trees.conll import read_malttab
from fastspectral.lm import LatentBigramLM, KneserNeyBigramLM
from fastspectral.lm.cli import read_corpus
out = "tests/data/legacy"
g = LatentPCFG.default(n_states=2, seed=0)
trees = g.sample(400, seed=0)
test = g.sample(40, seed=5)
words = [t.leaves() for t in test]
res = {}
def dig(lines): return hashlib.sha256("\n".join(lines).encode()).hexdigest()
models = {"pcfg": PCFG(v=2, h=1, jobs=1), "spectral": SpectralLPCFG(n_states=4, jobs=1),
          "pivot": PivotLPCFG(n_states=4, jobs=1), "em": EMLPCFG(n_states=4, iterations=3, jobs=1)}
for name, m in models.items():
    m.fit(trees)
    m.save(f"{out}/{name}.fsm")
    res[name] = dig([str(t) for t in m.parse(words, jobs=1)])
dep = list(itertools.islice(read_malttab("../shared/data/dep/wsj-sample.dp"), 300))
m = SHAGParser(states=4).fit(dep[:250]); m.save(f"{out}/shag.fsm")
res["shag"] = dig([" ".join(map(str, s.heads)) for s in m.parse(dep[250:], jobs=1)])
sents = read_corpus("../shared/data/brown/brown-tagged.txt", max_tokens=20000)
test_s = read_corpus("../shared/data/brown/brown-tagged.txt", skip_tokens=20000, max_tokens=5000)
for name, m in {"lm": LatentBigramLM(n_states=4, method="pivot-em", em_iterations=2),
                "kn": KneserNeyBigramLM()}.items():
    m.fit(sents); m.save(f"{out}/{name}.fsm")
    res[name] = repr(m.log_likelihood(test_s))
json.dump(res, open(f"{out}/expected.json", "w"), indent=1)
print(res)
