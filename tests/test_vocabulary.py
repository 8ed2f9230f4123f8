"""One parameter vocabulary across the learners (docs/ARCHITECTURE.md, "one vocabulary").

* the renamed hyperparameters: today's names in every signature, the old names read from model
  files written by older versions (``Estimator._renamed_params``), the old command-line flags
  refused with a one-line message naming the new flag;
* ``fit``'s data argument is ``X`` in every learner;
* the top-level package lists every kind of the registry.
"""
from __future__ import annotations

import importlib
import inspect
import sys

import pytest

import fastspectral
from fastspectral import cli, models
from fastspectral.io.modelfile import load_model_file, save_model_file

KINDS = sorted(models.REGISTRY)

#: kind -> {old name: today's name} of the renames of this vocabulary
RENAMED = {
    "mst": {"epochs": "iterations", "tagset": "tag_column"},
    # the base parser's epochs / tagset of a re-ranker's file: its nested mst
    # (test_old_mst_names_of_a_reranker_file_become_its_base_parser)
    "rerank-dep": {"rerank_epochs": "rerank_iterations"},
    "shag": {"tagset": "tag_column"},
    "latent-dep": {"tags": "tag_column"},
    "atm": {"dim": "rank", "tagset": "tag_map"},
    "ccm": {"tagset": "tag_map"},
    "lexical": {"max_iter": "iterations"},
}

#: ``fastspectral train KIND`` old flag -> new flag
RENAMED_FLAGS = [
    ("mst", "--epochs", "--iterations"), ("mst", "--tagset", "--tag-column"),
    ("rerank-dep", "--epochs", "--iterations"),
    ("rerank-dep", "--rerank-epochs", "--rerank-iterations"),
    ("rerank-dep", "--tagset", "--tag-column"), ("shag", "--tagset", "--tag-column"),
    ("latent-dep", "--tags", "--tag-column"), ("atm", "--dim", "--rank"),
    ("atm", "--tagset", "--tag-map"), ("ccm", "--tagset", "--tag-map"),
    ("lexical", "--max-iter", "--iterations"),
]


def _params(kind):
    return models.model_class(kind)._get_param_names()


@pytest.mark.parametrize("kind", sorted(RENAMED))
def test_renamed_names_are_gone_and_read_from_old_files(kind):
    cls = models.model_class(kind)
    names = _params(kind)
    for old, new in RENAMED[kind].items():
        assert old not in names and new in names
        assert cls._renamed_params[old] == new
        default = inspect.signature(cls.__init__).parameters[new].default
        assert cls._params_from_file({old: default}) == {new: default}


@pytest.mark.parametrize("kind", KINDS)
def test_no_learner_uses_a_retired_name(kind):
    """``tagset``, ``tags``, ``epochs``, ``max_iter`` are gone from every signature; ``dim``
    means an embedding size (ATM's spectral rank is ``rank``)."""
    names = set(_params(kind))
    assert not names & {"tagset", "tags", "epochs", "rerank_epochs", "max_iter"}
    if kind == "atm":
        assert "dim" not in names and {"rank", "embedding_dim"} <= names


@pytest.mark.parametrize("kind", KINDS)
def test_fit_takes_X(kind):
    fit = inspect.signature(models.model_class(kind).fit).parameters
    assert list(fit)[1] == "X"


def _dep_train():
    from fastspectral.dependency.data import trees_to_dep_sentences
    from fastspectral.synthetic import LatentPCFG
    from fastspectral.trees.transforms import clean

    trees = LatentPCFG.default(n_states=2, seed=0).sample(120, seed=3)
    deps = list(trees_to_dep_sentences(clean(t) for t in trees))
    return deps[:100], deps[100:110]


def _with_old_names(path, out, renamed):
    """Rewrite the model file ``path`` to ``out`` with its hyperparameters under old names."""
    kind, meta, arrays = load_model_file(path)
    new_to_old = {v: k for k, v in renamed.items()}
    meta["params"] = {new_to_old.get(k, k): v for k, v in meta["params"].items()}
    assert set(renamed) <= set(meta["params"])
    save_model_file(out, kind, meta, arrays)


def test_old_mst_file_loads_with_the_same_parameters_and_parses(tmp_path):
    from fastspectral.rerank.mst import MSTParser

    train, test = _dep_train()
    m = MSTParser(iterations=2, bits=16, tag_column="xpos", jobs=1).fit(train)
    m.save(tmp_path / "new.mst")
    _with_old_names(tmp_path / "new.mst", tmp_path / "old.mst", RENAMED["mst"])
    old = fastspectral.load(tmp_path / "old.mst")
    assert old.get_params() == m.get_params()
    assert (old.iterations, old.tag_column, old.tag_column_) == (2, "xpos", "xpos")
    assert [s.heads for s in old.parse(test, jobs=1)] == [s.heads for s in m.parse(test, jobs=1)]


def test_old_atm_file_loads_with_the_same_parameters_and_parses(tmp_path):
    from fastspectral.synthetic import LatentPCFG
    from fastspectral.unsupervised.atm import ATMParser

    g = LatentPCFG.default(n_states=2, seed=0)
    train, test = g.sample(150, seed=3), [t.leaves() for t in g.sample(5, seed=4)]
    m = ATMParser(rank=3, embedding_dim=5, tag_map="as-is").fit(train)
    m.save(tmp_path / "new.atm")
    _with_old_names(tmp_path / "new.atm", tmp_path / "old.atm", RENAMED["atm"])
    old = fastspectral.load(tmp_path / "old.atm")
    assert old.get_params() == m.get_params() and (old.rank, old.tag_map) == (3, "as-is")
    assert [str(t) for t in old.parse(test, jobs=1)] == [str(t) for t in m.parse(test, jobs=1)]


def test_old_spectral_params_of_a_reranker_are_renamed():
    """``spectral_params`` of an older re-ranker name the latent dependency model's old
    parameters (``tags``): the model built from them has today's names, given to the
    constructor (deprecated) or read from a file."""
    from fastspectral.rerank.model import RerankDepParser

    with pytest.warns(DeprecationWarning, match="spectral=LatentDependencyModel"):
        spectral = RerankDepParser(spectral_params={"tags": "xpos", "dim": 4}).spectral
    assert (spectral.tag_column, spectral.dim, spectral.n_states) == ("xpos", 4, 16)
    spectral = RerankDepParser._params_from_file(
        {"spectral_params": {"tags": "xpos", "dim": 4}})["spectral"]
    assert (spectral.tag_column, spectral.dim, spectral.n_states) == ("xpos", 4, 16)


def test_old_mst_names_of_a_reranker_file_become_its_base_parser():
    """A re-ranker's file of older versions holds its base parser's settings flat, some
    under older names (``epochs``, ``tagset``): they become the nested ``mst``, with the
    re-ranker's seed and threads, as they configured it."""
    from fastspectral.rerank.model import RerankDepParser

    cls = RerankDepParser
    assert cls._renamed_params["epochs"] == "iterations"
    assert cls._renamed_params["tagset"] == "tag_column"
    got = cls._params_from_file({"epochs": 3, "tagset": "xpos", "minibatch": 2, "bits": 16,
                                 "random_state": 5, "jobs": 2, "rerank_epochs": 4, "k": 7})
    mst = got.pop("mst")
    assert got == {"random_state": 5, "jobs": 2, "rerank_iterations": 4, "k": 7}
    assert mst.get_params() == {"iterations": 3, "tag_column": "xpos", "minibatch": 2,
                                "bits": 16, "random_state": 5, "jobs": 2, "order": 1,
                                "single_root": None}


@pytest.mark.parametrize("kind,old,new", RENAMED_FLAGS)
def test_an_old_flag_fails_naming_the_new_one(capsys, tmp_path, kind, old, new):
    value = ["xpos"] if old in ("--tagset", "--tags") else ["3"]
    try:
        rc = cli.main(["train", kind, str(tmp_path / "t"), "-o", str(tmp_path / "m"), old,
                       *value])
    except SystemExit as exc:
        rc = exc.code
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err.startswith("fastspectral: error: ") and err.count("\n") == 1, err
    assert f"{old} was renamed {new}" in err
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("kind,old,new", RENAMED_FLAGS)
def test_the_new_flag_is_in_the_help(capsys, kind, old, new):
    try:
        rc = cli.main(["train", kind, "--help"])
    except SystemExit as exc:
        rc = exc.code
    out = capsys.readouterr().out
    assert rc in (0, None) and new in out
    assert not [line for line in out.splitlines() if line.lstrip().startswith(f"{old} ")]


# ------------------------------------------------- min_count / rare_threshold in the L-PCFGs
def _param_doc(cls, name) -> str:
    """The numpydoc description of parameter ``name`` in ``cls``'s docstring (one string)."""
    lines = inspect.getdoc(cls).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{name} : "))
    body = []
    for line in lines[start + 1:]:
        if not line.startswith("    "):
            break
        body.append(line.strip())
    return " ".join(body)


LPCFG_KINDS = ("spectral-lpcfg", "pivot-lpcfg", "em-lpcfg")


def test_min_count_and_rare_threshold_mean_one_thing_in_the_lpcfgs(capsys):
    """``min_count``: symbols with fewer training nodes keep one latent state, in the three
    L-PCFG learners and their ``--min-count`` flag; ``rare_threshold``: words seen at most this
    often share their tag's rare class (pivot and EM; the spectral learner's rare words, those
    seen once, are not a parameter).  Two things, two names."""
    classes = [models.model_class(k) for k in LPCFG_KINDS]
    assert {_param_doc(c, "min_count") for c in classes} == \
        {"Symbols with fewer training nodes keep one state."}
    with_rare = [c for c in classes if "rare_threshold" in c._get_param_names()]
    assert [c.kind for c in with_rare] == ["pivot-lpcfg", "em-lpcfg"]
    assert {_param_doc(c, "rare_threshold") for c in with_rare} == \
        {"Words seen at most this often share their tag's \"rare\" lexical class."}
    for command in ("spectral", "pivot", "em", "pivot-em"):
        try:
            cli.main(["train", command, "--help"])
        except SystemExit:
            pass
        help_text = " ".join(capsys.readouterr().out.split())
        assert "--min-count N symbols with fewer training nodes keep one state" in help_text
        assert "--rare-threshold" not in help_text


# ---------------------------------------------------------------------------- top level
def test_every_kind_is_in_all_and_importable_from_the_top_level():
    for kind in KINDS:
        entry = models.get(kind)
        module, name = entry.target.split(":")
        assert name in fastspectral.__all__, name
        assert getattr(fastspectral, name) is getattr(importlib.import_module(module), name)
        assert name in dir(fastspectral)


def test_every_package_of_a_kind_is_a_listed_submodule():
    for kind in KINDS:
        package = models.get(kind).target.split(":")[0].split(".")[1]
        assert package in fastspectral._SUBMODULES, package
    for name in fastspectral._SUBMODULES:
        assert getattr(fastspectral, name) is sys.modules[f"fastspectral.{name}"]


def test_all_names_exist():
    for name in fastspectral.__all__:
        assert getattr(fastspectral, name) is not None, name


# ---------------------------------------------------------------------------- the table
def _bad_values(constraint):
    from fastspectral.base import Interval

    if isinstance(constraint, Interval):
        out = ["x", True, constraint.low - 1]
        if constraint.kind is int:
            out.append(constraint.low + 0.5)
        if constraint.high is not None:
            out.append(constraint.high + 1)
        if constraint.closed in ("right", "neither"):
            out.append(constraint.low)
        return out
    if isinstance(constraint, (set, frozenset)):
        return ["__not-an-option__", 2.5]
    return [3] if constraint.startswith(("callable", "dict")) else ["maybe"]


@pytest.mark.parametrize("kind", KINDS)
def test_the_constraint_table_names_parameters_and_refuses_bad_values(kind):
    cls = models.model_class(kind)
    table = cls._all_constraints()
    assert set(table) <= set(cls._get_param_names())
    cls()._validate_params()                           # the defaults pass
    for name, constraint in table.items():
        for bad in _bad_values(constraint):
            with pytest.raises((ValueError, TypeError), match=name) as exc:
                cls(**{name: bad})._validate_params()
            assert "\n" not in str(exc.value)


def test_interval_and_option_checks():
    from fastspectral.base import Interval, check_constraint

    check_constraint("a", 3, Interval(int, 1))
    check_constraint("a", None, Interval(int, 1, allow_none=True))
    check_constraint("p", 1.0, Interval(float, 0.0, 1.0, closed="both"))
    check_constraint("b", 28, Interval(int, 16, 28, closed="both"))
    check_constraint("o", 2, {1, 2})
    check_constraint("f", None, "callable or None")
    for value, constraint, message in [
            (0, Interval(int, 1), "a must be an integer >= 1, got 0"),
            (1.0, Interval(float, 0.0, 1.0), r"a must be a number in \[0.0, 1.0\), got 1.0"),
            (0.0, Interval(float, 0.0, closed="neither"), "a must be a number > 0.0, got 0.0"),
            (float("nan"), Interval(float, 0.0), "a must be a number >= 0.0"),
            ("1", Interval(float, 0.0), "a must be a number"),
            (29, Interval(int, 16, 28, closed="both"), "a must be an integer in 16..28"),
            (True, {1, 2}, "a must be one of 1, 2, got True"),
            ([1], {1, 2}, "a must be one of"), ("yes", "boolean", "a must be True or False"),
            (3, "dict or None", "a must be a dict or None")]:
        with pytest.raises(ValueError, match=message):
            check_constraint("a", value, constraint)
    with pytest.raises(TypeError, match="a must be a callable"):
        check_constraint("a", 3, "callable")
    with pytest.raises(ValueError):
        Interval(int, 1, 5)                            # an integer range includes its ends


def test_one_validation_hook():
    """``_validate_params`` is the base's alone; learners add ``_check_params`` only."""
    from fastspectral.base import Estimator

    for kind in KINDS:
        cls = models.model_class(kind)
        assert cls._validate_params is Estimator._validate_params
        for retired in ("_validate", "_check_common_params", "_check_probabilistic_params"):
            assert not hasattr(cls, retired), (kind, retired)


# ---------------------------------------------------------------------------- log_likelihood
def test_log_likelihood_is_always_the_pair_total_and_count():
    """Every model with ``log_likelihood`` returns ``(total log-probability, events)``."""
    from fastspectral.embeddings.brown_clusters import BrownClusters
    from fastspectral.embeddings.eigenwords import Eigenwords
    from fastspectral.latentdep.model import LatentDependencyModel
    from fastspectral.lpcfg.em import EMLPCFG
    from fastspectral.synthetic import LatentPCFG

    g = LatentPCFG.default(n_states=2, seed=0)
    trees, test = g.sample(120, seed=3), g.sample(4, seed=4)
    words = [t.leaves() for t in test]
    n_words = sum(len(w) for w in words)
    train_deps, test_deps = _dep_train()
    cases = [
        (Eigenwords(dim=2, min_count=1).fit([t.leaves() for t in trees]), words, n_words),
        (BrownClusters(n_clusters=3).fit([t.leaves() for t in trees]), words, n_words),
        (EMLPCFG(n_states=2, iterations=1, min_count=5, jobs=1).fit(trees), test, n_words),
        (LatentDependencyModel(n_states=2, dim=2, jobs=1).fit(train_deps), test_deps,
         sum(len(s.words) for s in test_deps)),
    ]
    for model, items, n in cases:
        ll = model.log_likelihood(items)
        assert isinstance(ll, tuple) and len(ll) == 2, type(model).__name__
        assert isinstance(ll[0], float) and ll[0] < 0 and ll[1] == n, type(model).__name__
