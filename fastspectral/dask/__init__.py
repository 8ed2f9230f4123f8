"""Parsing and learning at scale with Dask (optional: ``pip install 'fastspectral[dask]'``).

Parsing (:mod:`fastspectral.dask.parse`): :func:`parse_bag`, :func:`parse_column` and
:func:`parse_files` parse a ``dask.bag``, a Dask DataFrame column or a list of files with a
saved model file, loaded once per worker process; see ``docs/scale.md``.  The file pipeline
itself is :mod:`fastspectral.io.pipeline`; :func:`connect` (:mod:`fastspectral.dask.client`)
gives a client of a local cluster or of a scheduler.

The names below are imported on first use: ``import fastspectral.dask`` imports neither Dask
nor the parsers.
"""
from __future__ import annotations

#: public name -> module that defines it (one line per module; ``__all__`` is their names)
_EXPORTS = {}
_EXPORTS.update(dict.fromkeys(("parse_bag", "parse_column", "parse_files", "ParseFilesResult", "PartitionError", "ModelRef", "model_ref", "worker_model", "model_loads", "ship_model", "thread_plan"), "fastspectral.dask.parse"))  # noqa: E501
_EXPORTS.update(dict.fromkeys(("fit_partitioned", "fit_files", "read_partitions", "learnable"), "fastspectral.dask.learn"))  # noqa: E501
_EXPORTS.update(dict.fromkeys(("connect",), "fastspectral.dask.client"))


def __getattr__(name):
    import importlib

    if name == "__all__":
        return sorted(_EXPORTS)
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'fastspectral.dask' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))

