"""CPU seconds of the stages of ``fastspectral train spectral`` (docs/notes/throughput.md, "Training").

Runs the command line in this process (the same code path as the ``fastspectral`` command) with
the stage functions wrapped by timers of the process's CPU time (``getrusage``: user + sys, all
threads), then prints one row per stage.  Stages nest: a row is the time inside that function,
its sub-rows are part of it.

    python experiments/profile_train.py ../shared/data/ptb/wsj-sample.mrg --states 16

The whole process (start-up and imports included) is what ``/usr/bin/time`` reports for
``fastspectral train spectral FILE -o m.fsm --states 16``; this script adds the import time
measured from its own start.
"""
import resource
import sys


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


T_START = _cpu()
TOTALS: dict = {}
CALLS: dict = {}


def _timed(name, fn):
    def wrapper(*args, **kwargs):
        t = _cpu()
        try:
            return fn(*args, **kwargs)
        finally:
            TOTALS[name] = TOTALS.get(name, 0.0) + _cpu() - t
            CALLS[name] = CALLS.get(name, 0) + 1
    return wrapper


def _patch(module, attr, name):
    setattr(module, attr, _timed(name, getattr(module, attr)))


def main(argv):
    import os
    import tempfile

    from fastspectral import base
    from fastspectral.cli import kit
    from fastspectral.cli import main as cli_main
    from fastspectral.grammar import grammar as grammar_mod
    from fastspectral.grammar import pcfg as pcfg_mod
    from fastspectral.linalg import svd as svd_mod
    from fastspectral.lpcfg import fast_moments, latent, spectral

    imports = _cpu() - T_START
    _patch(kit, "read_training_data", "read the treebank (read_ptb)")
    _patch(latent, "clean", "clean")
    _patch(latent, "collapse_unary", "collapse_unary")
    _patch(latent, "binarize", "binarize (v=2, h=1)")
    grammar_mod.Grammar.from_trees = classmethod(_timed(
        "Grammar.from_trees", grammar_mod.Grammar.from_trees.__func__))
    _patch(latent, "extract_nodes", "extract_nodes")
    _patch(latent, "_coarse_grammar", "coarse grammar")
    _patch(pcfg_mod.PCFG, "fit_prepared", "PCFG.fit_prepared")
    _patch(spectral.SpectralLPCFG, "_estimate", "_estimate")
    _patch(spectral, "default_feature_keys", "  feature keys (compiled)")
    _patch(spectral, "feature_matrices", "  feature_matrices")
    _patch(svd_mod, "_truncated_svd", "  truncated_svd")
    _patch(fast_moments, "binary_rule_tensors", "  binary rule tensors (compiled)")
    _patch(spectral.SpectralLPCFG, "_estimate_lexical", "  lexical table")
    _patch(base.Estimator, "save", "save (uncompressed .npz)")
    _patch(spectral.SpectralLPCFG, "fit", "SpectralLPCFG.fit")
    argv = list(argv)
    if "-o" not in argv:
        argv += ["-o", os.path.join(tempfile.mkdtemp(), "m.fsm")]
    rc = cli_main(["train", "spectral"] + argv)
    total = _cpu() - T_START
    print(f"{'stage':<40} {'calls':>6} {'CPU-s':>7}")
    print(f"{'imports (this script)':<40} {'':>6} {imports:7.2f}")
    for name, secs in TOTALS.items():
        print(f"{name:<40} {CALLS[name]:>6} {secs:7.2f}")
    print(f"{'whole run in this process':<40} {'':>6} {total:7.2f}")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
