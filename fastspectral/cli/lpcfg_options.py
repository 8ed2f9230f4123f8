"""The options every L-PCFG kind shares (``train spectral``, ``pivot``, ``em``,
``pivot-em``): the pruning model, the states of single symbols, float32 tensor files; and the
learner built with them (:func:`build`)."""
from __future__ import annotations

import json

from . import kit


def add_pruner(group, cls, show_states=True, show_threshold=True) -> None:
    """``--pruner-states`` / ``--pruner-threshold``: the L-PCFGs' pruning model with fewer
    states (``pruner_states``, ``pruner_threshold``)."""
    from .._argtypes import positive_int_or_none, unit_interval

    kit.option(group, "--pruner-states", cls, "pruner_states", type=positive_int_or_none,
               metavar="M", help="also train the same model with M states (fewer than "
                                 "--states; 'none': no such model) and save it in the model "
                                 "file: parsing prunes with its marginals before the full "
                                 "model's pass",
               show_default=show_states)
    kit.option(group, "--pruner-threshold", cls, "pruner_threshold", type=unit_interval,
               metavar="T", help="marginal threshold of the pruning model's pass",
               show_default=show_threshold)


def add_state_map(group) -> None:
    """``--state-map FILE``: the learner's ``state_map`` from a JSON file (:func:`build`
    reads it with :func:`read_state_map`)."""
    kit.reads(group.add_argument(
        "--state-map", dest="state_map_file", metavar="FILE", default=None,
        help="states of single symbols of the binarised grammar, over --states / "
             "--states-pre / --min-count: a JSON object {\"SYMBOL\": STATES, ...}"),
        regular=True)


def read_state_map(path) -> dict:
    """``{symbol: states}`` of a ``--state-map`` file, a JSON object whose values are
    integers >= 1.  Anything else raises :class:`~fastspectral.cli.kit.CommandError` naming
    the file (and the line of a JSON syntax error)."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except UnicodeDecodeError as exc:
        raise kit.CommandError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise kit.CommandError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise kit.CommandError(f"{path}: expected a JSON object {{\"SYMBOL\": STATES, ...}}, "
                               f"got {type(data).__name__}")
    for sym, k in data.items():
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise kit.CommandError(f"{path}: the states of {sym!r} must be an integer >= 1, "
                                   f"got {k!r}")
    return data


def add_float32_tensors(group) -> None:
    """``--float32-tensors``: the L-PCFGs' binary rule tensors saved in float32
    (``LatentPCFGBase.float32_tensors``; :func:`float32_after_fit` applies it)."""
    group.add_argument("--float32-tensors", action="store_true",
                       help="save the binary rule tensors in float32: half the model file, "
                            "parsed without a copy of them; parses read the same float32 "
                            "products (docs/benchmarks-constituency.md)")


def float32_after_fit(args, model) -> None:
    """``--float32-tensors``: the fitted model keeps float32 tensors only (before saving)."""
    if getattr(args, "float32_tensors", False):
        model.float32_tensors()


def build(args, cls, preset):
    """:func:`~fastspectral.cli.kit.build_estimator` with ``--state-map FILE`` read."""
    path = getattr(args, "state_map_file", None)
    if path is not None and "state_map" not in preset:
        preset = {**preset, "state_map": read_state_map(path)}
    return kit.build_estimator(args, cls, preset)
