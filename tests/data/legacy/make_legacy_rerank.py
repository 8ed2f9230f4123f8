# Wrote rerank.fsm of this folder with fastspectral at commit 457465e (before the re-ranker's
# sub-models became nested estimators: the base parser's settings flat, the spectral model's
# as the dict spectral_params, with the latent dependency model's older name "tags"), and its
# parse digest into expected_rerank.json; tests/test_legacy_models.py checks that it still
# loads, with the nested estimators, and parses the same.  Run from the repository root.
import hashlib, json, sys
sys.path.insert(0, "tools")
from digests import make_data
from fastspectral.rerank import RerankDepParser
out = "tests/data/legacy"
train, test = make_data()["dependency"]
def dig(lines): return hashlib.sha256("\n".join(lines).encode()).hexdigest()
m = RerankDepParser(k=3, features="base+spectral", folds=2, iterations=1, minibatch=4,
                    bits=16, rerank_bits=16, tag_column="xpos", random_state=1,
                    spectral_params={"n_states": 3, "tags": "xpos", "ridge": 0.5}, jobs=1)
m.fit(train[:24])
m.save(f"{out}/rerank.fsm")
res = {"rerank": dig([" ".join(map(str, s.heads)) for s in m.parse(test, jobs=1)])}
json.dump(res, open(f"{out}/expected_rerank.json", "w"), indent=1)
print(res)
