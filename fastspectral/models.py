"""The one registry of model kinds.

A model kind is a learner class (a subclass of :class:`fastspectral.base.Estimator` whose class
attribute ``kind`` names it) plus one :func:`register` line below.  Everything that needs to know
the kinds reads this table: :func:`fastspectral.load` (model files record their kind),
``fastspectral train`` (one sub-command per entry of ``train``), ``parse`` (the class's
``input_kind``), ``demo`` (entries with ``demo``), ``bench`` and the top-level imports
(``fastspectral.PCFG`` ...).  Nothing is imported until it is used, so ``import fastspectral``
and the command line stay fast.

Adding a kind::

    register("my-kind", "fastspectral.mypkg.model:MyModel", "sentences",
             train={"my-kind": {}}, cli="fastspectral.cli.mykind")

``cli`` is optional: without it, ``fastspectral train my-kind`` gets one option per
hyperparameter of ``MyModel.__init__`` whose default is a number, a string or a bool (see
:mod:`fastspectral.cli.kit`); a CLI module adds hand-written options (see
:mod:`fastspectral.cli.pcfg` for the protocol).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field

__all__ = ["ModelKind", "REGISTRY", "register", "get", "model_class", "train_commands",
           "kind_of_class"]

#: what ``fastspectral parse`` / ``train`` read for a kind
INPUT_KINDS = ("sentences", "dependency", "sequences")


@dataclass(frozen=True)
class ModelKind:
    """One registry entry.

    Attributes
    ----------
    kind : str
        The model kind (the class's ``kind`` attribute; the kind written in its model files).
    target : str
        ``"module:Class"`` of the learner.
    input_kind : str
        ``"sentences"`` (text in, bracketed trees out), ``"dependency"`` (CoNLL in and out) or
        ``"sequences"`` (sequence models: scored, not parsed).
    train : dict
        ``fastspectral train NAME`` sub-commands of this kind: ``{name: preset}``, where the
        preset holds constructor arguments fixed by that name (``pivot-em`` is ``EMLPCFG`` with
        ``init="pivot"``).
    cli : str or None
        Module of hand-written command-line options (``add_arguments`` / ``build``), or None
        for options derived from the constructor's signature.
    demo : tuple
        ``(label, constructor arguments)`` pairs trained by ``fastspectral demo``.
    aliases : tuple
        Other kinds found in model files that this class loads (older names).
    """

    kind: str
    target: str
    input_kind: str
    train: dict = field(default_factory=dict)
    cli: str | None = None
    demo: tuple = ()
    aliases: tuple = ()

    def load_class(self):
        """Import and return the learner class."""
        module, name = self.target.split(":")
        return getattr(importlib.import_module(module), name)


REGISTRY: dict[str, ModelKind] = {}


def register(kind: str, target: str, input_kind: str, *, train=None, cli=None, demo=(),
             aliases=()) -> ModelKind:
    """Add a model kind (see the module docstring); returns its entry."""
    if input_kind not in INPUT_KINDS:
        raise ValueError(f"input_kind must be one of {INPUT_KINDS}, got {input_kind!r}")
    entry = ModelKind(kind, target, input_kind, dict(train or {}), cli, tuple(demo),
                      tuple(aliases))
    REGISTRY[kind] = entry
    return entry


# ---- the model kinds: one line each --------------------------------------------------------
register("pcfg", "fastspectral.grammar.pcfg:PCFG", "sentences", train={"pcfg": {}},
         cli="fastspectral.cli.pcfg",
         demo=(("pcfg v=1 h=0", {"v": 1, "h": 0}), ("pcfg v=2 h=1", {"v": 2, "h": 1})))
register("spectral-lpcfg", "fastspectral.lpcfg.spectral:SpectralLPCFG", "sentences",
         train={"spectral": {}}, cli="fastspectral.cli.spectral",
         demo=(("spectral L-PCFG", {}),))
register("pivot-lpcfg", "fastspectral.lpcfg.pivot:PivotLPCFG", "sentences",
         train={"pivot": {}}, cli="fastspectral.cli.latent")
register("em-lpcfg", "fastspectral.lpcfg.em:EMLPCFG", "sentences",
         train={"em": {"init": "random"}, "pivot-em": {"init": "pivot"}},
         cli="fastspectral.cli.latent")
register("shag", "fastspectral.dependency.model:SHAGParser", "dependency",
         train={"shag": {}}, cli="fastspectral.cli.shag")
register("latent-bigram-lm", "fastspectral.lm.saul_pereira:LatentBigramLM", "sequences",
         train={"lm": {}}, cli="fastspectral.cli.lm")
register("kneser-ney-bigram-lm", "fastspectral.lm.kneser_ney:KneserNeyBigramLM", "sequences",
         train={"kn-lm": {}}, cli="fastspectral.cli.lm")
register("hmm", "fastspectral.hmm.model:HMM", "sequences", train={"hmm": {}}, cli="fastspectral.cli.hmm")
register("lexical", "fastspectral.lexical.model:LexicalDisambiguator", "dependency", train={"lexical": {}}, cli="fastspectral.cli.lexical")
register("eigenwords", "fastspectral.embeddings.eigenwords:Eigenwords", "sequences", train={"eigenwords": {}}, cli="fastspectral.cli.eigenwords")
register("brown", "fastspectral.embeddings.brown_clusters:BrownClusters", "sequences", train={"brown": {}}, cli="fastspectral.cli.brown")
register("atm", "fastspectral.unsupervised.atm:ATMParser", "sentences", train={"atm": {}}, cli="fastspectral.cli.atm")
register("ccm", "fastspectral.unsupervised.ccm:CCMParser", "sentences", train={"ccm": {}}, cli="fastspectral.cli.ccm")
register("mst", "fastspectral.rerank.mst:MSTParser", "dependency", train={"mst": {}}, cli="fastspectral.cli.mst")
register("rerank-dep", "fastspectral.rerank.model:RerankDepParser", "dependency", train={"rerank-dep": {}}, cli="fastspectral.cli.rerank")
register("latent-dep", "fastspectral.latentdep.model:LatentDependencyModel", "dependency", train={"latent-dep": {}}, cli="fastspectral.cli.latentdep")


# ---- look-ups ------------------------------------------------------------------------------
def get(kind: str) -> ModelKind:
    """The entry of ``kind`` (also found by an alias); ``KeyError`` when unknown."""
    entry = REGISTRY.get(kind)
    if entry is not None:
        return entry
    for e in REGISTRY.values():
        if kind in e.aliases:
            return e
    raise KeyError(kind)


def model_class(kind: str):
    """The learner class of ``kind``."""
    return get(kind).load_class()


def train_commands() -> dict[str, tuple[ModelKind, dict]]:
    """``{name: (entry, preset)}`` for every ``fastspectral train NAME``, in registry order."""
    out = {}
    for entry in REGISTRY.values():
        for name, preset in entry.train.items():
            out[name] = (entry, dict(preset))
    return out


def kind_of_class(name: str) -> ModelKind | None:
    """The entry whose class is called ``name`` (for ``fastspectral.<Name>`` imports)."""
    for entry in REGISTRY.values():
        if entry.target.split(":")[1] == name:
            return entry
    return None
