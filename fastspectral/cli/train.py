"""``fastspectral train NAME TREEBANK... -o MODEL``: one sub-command per registry entry."""
from __future__ import annotations

import argparse
import importlib
import inspect
import time

from .. import models
from .._argtypes import positive_int
from . import kit
from .kit import errors_in

_TREEBANK_FORMATS = ("ptb", "conllu", "conllx", "malttab", "brown")

EPILOG = """\
examples:
  fastspectral train pcfg wsj-train.mrg -o wsj.pcfg
  fastspectral train pcfg train.trees -o model.pcfg --v 1 --h 0
  fastspectral train spectral part1.mrg part2.mrg -o wsj.spectral   (several files: one treebank)
  fastspectral train pcfg --help          (options of one model type)
  fastspectral train spectral wsj-*.mrg -o wsj.spectral --scheduler tcp://10.0.0.1:8786
  fastspectral train pcfg part1.mrg part2.mrg -o wsj.pcfg --dask-workers 2

With --scheduler / --dask-workers (pip install 'fastspectral[dask]') each file is read on a
worker as one partition (--partitions-per-file N cuts each file in N); the statistics of the
partitions are merged on the cluster and the model is the one trained on the concatenated
files (docs/scale.md).
"""


def load_hook(entry: models.ModelKind):
    """``(module, None)`` for the entry's CLI module (None: options from the signature), or
    ``(None, reason)`` when it cannot be imported."""
    if entry.cli is None:
        return None, None
    try:
        return importlib.import_module(entry.cli), None
    except Exception as exc:  # one broken kind must not break the other commands
        return None, f"{entry.cli} failed to import: {type(exc).__name__}: {exc}"


def _inputs_parent(input_kind: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    what = {"sentences": "training treebank(s) (PTB brackets; '.gz' accepted)",
            "dependency": "training treebank(s) (CoNLL-U, CoNLL-X, Malt-TAB, or PTB brackets "
                          "converted with head rules; '.gz' accepted)",
            "sequences": "training corpus (one sentence a line; '.gz' accepted)"}[input_kind]
    kit.reads(p.add_argument("treebank",
                             metavar="TREEBANK" if input_kind != "sequences" else "CORPUS",
                             nargs="+", help=what + "; several files are read as one"))
    kit.writes(p.add_argument("-o", "--output", required=True, metavar="MODEL",
                              help="where to write the model file"))
    kit.add_encoding(p, help="encoding of the input files (default: utf-8; e.g. latin-1)")
    if input_kind != "sequences":
        p.add_argument("--format", choices=_TREEBANK_FORMATS, default=None,
                       help="treebank format (default: detected from the content)")
    g = p.add_argument_group("Dask: learn from partitions (pip install 'fastspectral[dask]')")
    d = g.add_mutually_exclusive_group()
    kit.reads(d.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="learn on the Dask cluster of this scheduler (tcp://HOST:8786, or the "
                        "JSON file of dask-scheduler --scheduler-file); each file is read on a "
                        "worker"), address=True)
    d.add_argument("--dask-workers", type=positive_int, default=None, metavar="N",
                   help="learn on a local Dask cluster of N worker processes, 1 thread each")
    g.add_argument("--partitions-per-file", type=positive_int, default=1, metavar="N",
                   help="with Dask: cut every file into N partitions (default: 1)")
    return p


def generic_arguments(parser, cls) -> None:
    """Options derived from ``cls.__init__``: ``--name-with-dashes`` for every parameter whose
    default is a number, a string or a bool (``n_states`` is ``--states``, ``random_state``
    ``--seed``, ``jobs`` ``--jobs``)."""
    g = parser.add_argument_group(f"{cls.__name__} options")
    special = {"n_states": "--states", "random_state": "--seed"}
    for name, p in inspect.signature(cls.__init__).parameters.items():
        if name == "self" or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        flag = special.get(name, "--" + name.replace("_", "-"))
        d = p.default
        if name == "jobs":
            kit.add_jobs(g, cls)
        elif isinstance(d, bool):
            g.add_argument(flag, dest=name, default=argparse.SUPPRESS,
                           type=lambda t: {"yes": True, "true": True, "1": True, "no": False,
                                           "false": False, "0": False}[t.lower()],
                           metavar="yes|no", help=f"(default: {'yes' if d else 'no'})")
        elif isinstance(d, int) or (d is None and name in special):
            kit.option(g, flag, cls, name, type=int, metavar="N", help=name.replace("_", " "))
        elif isinstance(d, float):
            kit.option(g, flag, cls, name, type=float, metavar="X", help=name.replace("_", " "))
        elif isinstance(d, str):
            kit.option(g, flag, cls, name, metavar="S", help=name.replace("_", " "))


def add_train_command(sub, common, fmt, only: str | None = None) -> None:
    """The ``train`` parser; ``only``: build the full options of that sub-command alone (the
    others are listed without importing their classes)."""
    p_train = sub.add_parser("train", formatter_class=fmt, epilog=EPILOG,
                             help="learn a model from a treebank",
                             description="Learn a model from a treebank and save it.")
    types = p_train.add_subparsers(dest="model_type", metavar="MODEL_TYPE", title="model types")
    types.required = True
    for name, (entry, preset) in models.train_commands().items():
        parents = [_inputs_parent(entry.input_kind), common]
        hook, reason = load_hook(entry)
        if reason is not None:
            note = f"not available in this build ({reason})"
            p = types.add_parser(name, parents=parents, formatter_class=fmt, help=note,
                                 description=f"Model type {name!r}: {note}.")
            p.set_defaults(func=_unavailable(name, reason))
            continue
        desc = (getattr(hook, "DESCRIPTIONS", {}).get(name) or getattr(hook, "DESCRIPTION", None)
                or f"{entry.kind} model")
        p = types.add_parser(name, parents=parents, formatter_class=fmt, help=desc,
                             description=f"Train a {desc}.", epilog=getattr(hook, "EPILOG", None))
        p.set_defaults(func=lambda args, _n=name: run_training(args, _n))
        if only is None or only != name:
            continue
        try:
            cls = entry.load_class()
        except Exception as exc:
            raise kit.CommandError(f"model type {name!r} is not available in this build "
                                   f"({type(exc).__name__}: {exc})") from None
        if hook is not None:
            hook.add_arguments(p, cls)
        else:
            generic_arguments(p, cls)


def _unavailable(name, reason):
    def fail(args):
        raise kit.CommandError(f"model type {name!r} is not available in this build ({reason})")
    return fail


def run_training(args, name: str) -> int:
    """Read the treebank(s), build and fit the learner of ``train NAME``, save the model."""
    entry, preset = models.train_commands()[name]
    hook, reason = load_hook(entry)
    if reason is not None:
        raise kit.CommandError(f"model type {name!r} is not available in this build ({reason})")
    kit.full_scale_defaults(args, name, partitions=getattr(args, "scheduler", None) is not None
                            or bool(getattr(args, "dask_workers", None)))
    paths = args.treebank if isinstance(args.treebank, list) else [args.treebank]
    for path in paths:
        kit.require_file(path, "treebank")
    kit.require_output_path(args.output, "model file", inputs=paths)
    cls = entry.load_class()
    if getattr(args, "scheduler", None) is not None or getattr(args, "dask_workers", None):
        return _run_dask_training(args, name, entry, preset, hook, cls, paths)
    t0 = time.perf_counter()
    read = getattr(hook, "read", None)
    data = []
    for path in paths:
        one = argparse.Namespace(**{**vars(args), "treebank": path})
        data.extend(read(one) if read is not None
                    else kit.read_training_data(one, entry.input_kind))
    t1 = time.perf_counter()
    build = getattr(hook, "build", None) or kit.build_estimator
    model = build(args, cls, preset)
    fit = getattr(hook, "fit", None)
    with errors_in(paths[0] if len(paths) == 1 else None):
        fitted = fit(args, model, data) if fit is not None else model.fit(data)
    model = model if fitted is None else fitted
    t2 = time.perf_counter()
    kit.check_interrupted()         # a Ctrl-C that compiled code dropped: no model is saved
    after = getattr(hook, "after_fit", None)
    if after is not None:
        after(args, model)
    model.save(args.output)
    kit.logger.info(f"trained {name} on {len(data)} items from {', '.join(paths)} "
                    f"(read {t1 - t0:.2f} s, train {t2 - t1:.2f} s); model saved to {args.output}")
    return 0


def read_one(args, path, input_kind: str, hook_name):
    """The training items of one file as ``run_training`` reads them (the CLI module's
    ``read``, else :func:`kit.read_training_data`); a Dask task reading a partition."""
    one = argparse.Namespace(**{**vars(args), "treebank": path})
    hook = importlib.import_module(hook_name) if hook_name else None
    read = getattr(hook, "read", None)
    with errors_in(path):
        return read(one) if read is not None else kit.read_training_data(one, input_kind)


def _run_dask_training(args, name, entry, preset, hook, cls, paths) -> int:
    """``train NAME FILES... --scheduler ADDRESS | --dask-workers N``: the files are read on
    the workers (one partition each, or ``--partitions-per-file``), the learner's statistics
    are computed per partition and merged on the cluster (:mod:`fastspectral.dask.learn`)."""
    import functools
    import os

    from .parse import _dask_client

    build = getattr(hook, "build", None) or kit.build_estimator
    model = build(args, cls, preset)
    from ..dask.learn import learnable

    if not learnable(model):
        raise kit.CommandError(f"model type {name!r} cannot learn from partitions (no "
                               "statistics protocol): train it without --scheduler / "
                               "--dask-workers")
    if getattr(model, "pruner_states", None) is not None:
        raise kit.CommandError("--pruner-states is not available with --scheduler / "
                               "--dask-workers (learning from partitions trains no pruning "
                               "model)")
    # the dev set (small, not partitioned) is read here, before any cluster starts, and goes
    # to the estimate on the client (``fit_statistics``)
    params = getattr(hook, "fit_params", None)
    fit_params = params(args, model) if params is not None else {}
    if getattr(args, "dev", None) is not None and params is None:
        raise kit.CommandError("--dev is not available with --scheduler / --dask-workers")
    t0 = time.perf_counter()
    client, cluster, _ = _dask_client(args)
    try:
        from ..dask.learn import fit_partitioned, read_partitions

        reader = functools.partial(read_one, args, input_kind=entry.input_kind,
                                   hook_name=hook.__name__ if hook is not None else None)
        parts = read_partitions(client, [os.path.abspath(p) for p in paths], reader=reader,
                                split=args.partitions_per_file)
        with errors_in(paths[0] if len(paths) == 1 else None):
            fit_partitioned(model, parts, client, **fit_params)
        del parts
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    t1 = time.perf_counter()
    after = getattr(hook, "after_fit", None)
    if after is not None:
        after(args, model)
    model.save(args.output)
    passes = len(model.partitioned_fit_["passes"])
    kit.logger.info(f"trained {name} from {', '.join(paths)} on Dask "
                    f"({model.partitioned_fit_['partitions']} partitions, {passes} pass(es), "
                    f"{t1 - t0:.2f} s); model saved to {args.output}")
    return 0
