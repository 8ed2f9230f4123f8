"""Checks of the arrays of a loaded model file, before any kernel sees them.

A model file is untrusted input: an edited or corrupted array must give a
:class:`~fastspectral.errors.ModelFileError` naming the array at load time, never an
``IndexError`` traceback or a crash of a compiled kernel later.  Each learner's
``_from_model_file`` / ``from_state`` calls these helpers on every array it reads: dtype kind,
number of dimensions and shape, index ranges, offsets into parameter arrays, finite values.
Every check is vectorised and O(size of the array), run once per load.

The helpers take the array ``name`` as written in the file (with its prefix, e.g.
``fine_bin_parent``) so that the message points at it::

    fastspectral: error: wsj.pcfg: array 'fine_bin_parent': entry 17 is 90210, outside 0 .. 811
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelFileError

__all__ = ["fail", "get", "check_index", "check_offsets", "check_finite", "check_nonneg",
           "check_len", "check_sorted", "check_spans", "meta_list", "meta_int", "meta_float",
           "meta_dict", "meta_bool", "meta_str", "meta_strings", "from_params", "nested",
           "check_magnitude", "check_prob", "check_logprob", "check_value_ranges",
           "VALUE_RANGES"]

_KINDS = {"int": "iu", "float": "fiu", "bool": "biu", "any": "biuf"}


def fail(name: str, message: str):
    """Raise the :class:`ModelFileError` of array (or field) ``name``."""
    raise ModelFileError(f"array {name!r}: {message}")


def get(arrays: dict, name: str, kind: str = "any", ndim: int | None = 1, shape=None,
        dtype=None) -> np.ndarray:
    """Array ``name`` of ``arrays`` checked for its dtype ``kind`` (``"int"``, ``"float"``
    (integers accepted), ``"bool"`` (0/1 integers accepted), ``"any"`` numeric), number of
    dimensions and ``shape`` (a tuple, ``None`` entries free); returned converted to ``dtype``
    when given (C-contiguous)."""
    if name not in arrays:
        raise ModelFileError(f"array {name!r} is missing")
    a = np.asarray(arrays[name])
    if a.dtype.kind not in _KINDS[kind]:
        fail(name, f"dtype {a.dtype} where {kind} values are expected")
    if ndim is not None and a.ndim != ndim:
        fail(name, f"{a.ndim} dimensions where {ndim} are expected")
    if shape is not None:
        if len(shape) != a.ndim or any(s is not None and s != t for s, t in zip(shape, a.shape)):
            want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
            fail(name, f"shape {a.shape} where {want} is expected")
    if kind == "bool" and a.size and a.dtype.kind != "b" and (a.min() < 0 or a.max() > 1):
        fail(name, "values other than 0 and 1 in a boolean array")
    if dtype is not None:
        if np.dtype(dtype).kind in "iu" and a.dtype.kind in "iu" and a.size:
            info = np.iinfo(dtype)
            if a.min() < info.min or a.max() > info.max:
                fail(name, f"values outside the range of {np.dtype(dtype).name}")
        a = np.ascontiguousarray(a, dtype=dtype)
    return a


def _first_bad(bad: np.ndarray) -> int:
    return int(np.flatnonzero(bad.ravel())[0])


def check_index(a: np.ndarray, name: str, lo: int, hi: int, where: str = "") -> np.ndarray:
    """Every entry of the integer array ``a`` lies in ``lo .. hi - 1`` (``where``: which part
    of the array ``a`` is, for the message, e.g. ``"column 0"``)."""
    if a.size:
        bad = (a < lo) | (a >= hi)
        if bad.any():
            k = _first_bad(bad)
            fail(name, f"{where + ', ' if where else ''}entry {k} is {a.ravel()[k]}, outside "
                       f"{lo} .. {hi - 1}")
    return a


def check_len(a: np.ndarray, name: str, n: int, what: str = "") -> np.ndarray:
    """``a`` has ``n`` entries (first axis)."""
    if a.shape[0] != n:
        fail(name, f"{a.shape[0]} entries where {n} are expected" + (f" ({what})" if what else ""))
    return a


def check_finite(a: np.ndarray, name: str) -> np.ndarray:
    """No NaN or infinity in ``a``.  A finite float64 sum proves it in one pass without a
    temporary array (a NaN or an infinity makes the sum NaN or infinite); only a sum that is
    not finite (a bad entry, or finite entries whose sum overflows) looks entry by entry."""
    if a.size and a.dtype.kind == "f":
        with np.errstate(all="ignore"):
            if np.isfinite(np.sum(a, dtype=np.float64)):
                return a
        bad = ~np.isfinite(a)
        if bad.any():
            k = _first_bad(bad)
            fail(name, f"entry {k} is {a.ravel()[k]} (not finite)")
    return a


def check_nonneg(a: np.ndarray, name: str, where: str = "") -> np.ndarray:
    """Finite and >= 0 (probabilities, counts)."""
    check_finite(a, name)
    if a.size:
        bad = a < 0
        if bad.any():
            k = _first_bad(bad)
            fail(name, f"{where + ', ' if where else ''}entry {k} is {a.ravel()[k]} (negative)")
    return a


def check_sorted(a: np.ndarray, name: str, strict: bool = True) -> np.ndarray:
    """``a`` is increasing (``strict``) or non-decreasing (search keys)."""
    if a.shape[0] > 1:
        d = np.diff(a)
        bad = d <= 0 if strict else d < 0
        if bad.any():
            k = _first_bad(bad)
            fail(name, f"not sorted{' without repeats' if strict else ''} (entries {k} and "
                       f"{k + 1})")
    return a


def check_offsets(a: np.ndarray, name: str, n_entries: int) -> np.ndarray:
    """A CSR pointer array: starts at 0, never decreases, ends at ``n_entries``."""
    if a.shape[0] == 0 or a[0] != 0:
        fail(name, "an offset array must start at 0")
    check_sorted(a, name, strict=False)
    if a[-1] != n_entries:
        fail(name, f"ends at {a[-1]} where the data has {n_entries} entries")
    return a


def check_spans(off: np.ndarray, size: np.ndarray, name: str, total: int,
                allow_missing: bool = False) -> np.ndarray:
    """Every block ``[off[k], off[k] + size[k])`` lies inside an array of ``total`` entries
    (``off[k] = -1`` means "no block" when ``allow_missing``)."""
    if off.size:
        used = off >= 0 if allow_missing else np.ones(off.shape, dtype=bool)
        if not allow_missing and (off < 0).any():
            k = _first_bad(off < 0)
            fail(name, f"entry {k} is {off[k]} (a negative offset)")
        if allow_missing and (off < -1).any():
            k = _first_bad(off < -1)
            fail(name, f"entry {k} is {off[k]} (an offset must be -1 or >= 0)")
        bad = used & (off.astype(np.int64) + size.astype(np.int64) > total)
        if bad.any():
            k = _first_bad(bad)
            fail(name, f"entry {k}: offset {off[k]} + {size[k]} values runs past the {total} "
                       "values of its parameter array")
    return off


# ---- meta fields ---------------------------------------------------------------------------
def meta_list(meta: dict, key: str, item=str, where: str = "meta") -> list:
    """``meta[key]``: a list whose entries are all of type ``item``."""
    v = meta.get(key) if isinstance(meta, dict) else None
    if not isinstance(v, list) or not all(isinstance(x, item) and not isinstance(x, bool)
                                          for x in v):
        raise ModelFileError(f"{where} field {key!r}: not a list of {item.__name__}")
    return v


def meta_int(meta: dict, key: str, lo: int = 0, where: str = "meta") -> int:
    """``meta[key]``: an integer >= ``lo``."""
    v = meta.get(key) if isinstance(meta, dict) else None
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise ModelFileError(f"{where} field {key!r}: {v!r} is not an integer >= {lo}")
    return v


def meta_float(meta: dict, key: str, lo: float = 0.0, where: str = "meta") -> float:
    """``meta[key]``: a finite number >= ``lo``."""
    v = meta.get(key) if isinstance(meta, dict) else None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v < lo:
        raise ModelFileError(f"{where} field {key!r}: {v!r} is not a finite number >= {lo}")
    return float(v)


def meta_dict(meta: dict, key: str, where: str = "meta") -> dict:
    """``meta[key]``: a JSON object (dict)."""
    if not isinstance(meta, dict) or key not in meta:
        raise ModelFileError(f"{where} field {key!r} is missing")
    v = meta[key]
    if not isinstance(v, dict):
        raise ModelFileError(f"{where} field {key!r}: {type(v).__name__} where an object is "
                             "expected")
    return v


def meta_bool(meta: dict, key: str, where: str = "meta") -> bool:
    """``meta[key]``: true or false."""
    v = meta.get(key) if isinstance(meta, dict) else None
    if not isinstance(v, bool):
        raise ModelFileError(f"{where} field {key!r}: {v!r} is not true or false")
    return v


def meta_str(meta: dict, key: str, choices=None, allow_none: bool = False,
             where: str = "meta"):
    """``meta[key]``: a string (one of ``choices`` when given), or None when
    ``allow_none``."""
    v = meta.get(key) if isinstance(meta, dict) else None
    if v is None and allow_none and isinstance(meta, dict) and key in meta:
        return None
    if not isinstance(v, str) or (choices is not None and v not in choices):
        want = "a string" if choices is None else "one of " + ", ".join(map(repr, choices))
        raise ModelFileError(f"{where} field {key!r}: {v!r} is not {want}")
    return v


def meta_strings(meta: dict, key: str, where: str = "meta") -> list:
    """``meta[key]``: a list of strings (:func:`meta_list` of ``str``)."""
    return meta_list(meta, key, str, where)


def from_params(cls, meta: dict, check: str | None = "_validate_params"):
    """An unfitted ``cls`` built from ``meta["params"]`` (the hyperparameters a model file
    records), checked by its method ``check``: a missing or malformed entry, or a value the
    class refuses, is a :class:`ModelFileError` naming ``params`` (the loaded model would
    otherwise fail later, while parsing)."""
    params = meta_dict(meta, "params")
    try:
        model = cls(**cls._params_from_file(params))
        if check is not None:
            getattr(model, check)()
    except ModelFileError:
        raise
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise ModelFileError(f"meta field 'params': {exc}") from None
    return model


def nested(exc: Exception, prefix: str, where: str) -> ModelFileError:
    """The :class:`ModelFileError` ``exc`` of a model stored inside another (the base parser
    of a re-ranker: arrays ``PREFIX<name>``, meta fields under ``meta[where]``), its message
    rewritten to name the array or field as the file holds it."""
    import re

    msg = str(exc)
    if msg.startswith("array "):
        msg = re.sub(r"array '([^']*)'", lambda m: f"array '{prefix}{m.group(1)}'", msg)
    elif msg.startswith("meta "):
        msg = f"meta {where!r} " + msg[len("meta "):]
    else:
        msg = f"meta {where!r}: {msg}"
    return ModelFileError(msg)


#: no weight of a linear model read from a file may exceed this magnitude: its scores (sums
#: of up to millions of weights) then stay finite, where a finite 1e308 overflowed to inf and
#: inf - inf = NaN scores broke the decoders' argmax
MAX_WEIGHT = 1e100


def check_magnitude(a: np.ndarray, name: str, limit: float = MAX_WEIGHT) -> np.ndarray:
    """Finite, and no entry larger than ``limit`` in magnitude (weights that are summed)."""
    check_finite(a, name)
    if a.size:
        bad = np.abs(a) > limit
        if bad.any():
            k = _first_bad(bad)
            fail(name, f"entry {k} is {a.ravel()[k]}, larger in magnitude than {limit:g} "
                       "(its scores would overflow)")
    return a


# ---- probabilities -------------------------------------------------------------------------
#: slack of the upper bound 1 of probabilities (sums and products of floats)
PROB_SLACK = 1e-9


def _floating(a: np.ndarray, name: str, what: str) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype.kind != "f":
        fail(name, f"dtype {a.dtype} where floating-point {what} are expected")
    return check_finite(a, name)


def check_prob(a: np.ndarray, name: str) -> np.ndarray:
    """Probabilities: a floating-point array, finite, every entry in ``[0, 1]``."""
    a = _floating(a, name, "probabilities")
    # the range by two reductions first (no temporary arrays; the entries are finite here)
    if a.size and not (a.min() >= 0 and a.max() <= 1 + PROB_SLACK):
        bad = (a < 0) | (a > 1 + PROB_SLACK)
        if bad.any():
            k = _first_bad(bad)
            fail(name, f"entry {k} is {a.ravel()[k]}, not a probability (outside 0 .. 1)")
    return a


def check_logprob(a: np.ndarray, name: str) -> np.ndarray:
    """Log-probabilities: a floating-point array, finite, every entry ``<= 0``."""
    a = _floating(a, name, "log-probabilities")
    if a.size:
        bad = a > PROB_SLACK
        if bad.any():
            k = _first_bad(bad)
            fail(name, f"entry {k} is {a.ravel()[k]}, not a log-probability (positive)")
    return a


def check_count(a: np.ndarray, name: str) -> np.ndarray:
    """Counts (integer or floating-point): finite and ``>= 0``."""
    a = np.asarray(a)
    if a.dtype.kind not in "iuf":
        fail(name, f"dtype {a.dtype} where counts are expected")
    return check_nonneg(a, name)


_PCFG = {r"(pcfg_)?(fine|coarse)_(root|bin|un)_prob": "prob"}
_LPCFG_PROBS = {r"lpcfg_(T|U|c1)": "prob"}

#: the probability-like arrays of the model files of every kind (regular expressions matched
#: against the whole array name): ``"prob"`` (:func:`check_prob`), ``"logprob"``
#: (:func:`check_logprob`), ``"count"`` (:func:`check_count`).  Every kind of
#: :mod:`fastspectral.models` has an entry (``{}``: its arrays are weights or spectral
#: parameters, of any sign, checked by its loader); ``tests/test_input_safety.py`` checks that
#: every floating-point array a kind writes is either listed here or known to be unbounded.
VALUE_RANGES: dict[str, dict[str, str]] = {
    "pcfg": _PCFG,
    "spectral-lpcfg": _PCFG,
    "pivot-lpcfg": {**_PCFG, **_LPCFG_PROBS},
    "em-lpcfg": {**_PCFG, **_LPCFG_PROBS},
    "ccm": {r"(yield|context|unseen)_logprob": "logprob"},
    "latent-bigram-lm": {r"r|s": "prob"},
    "kneser-ney-bigram-lm": {r"data": "count"},
    "hmm": {r"rare_weight": "prob", r"kn_data": "count"},
    "brown": {r"class_bigrams|word_counts": "count"},
    "shag": {r"fb_.*_(counts|ctxtot|ctxtypes)": "count"},
    "eigenwords": {},
    "atm": {},
    "lexical": {},
    "mst": {},
    "rerank-dep": {},
    "latent-dep": {},
}

_CHECKS = {"prob": check_prob, "logprob": check_logprob, "count": check_count}


def check_value_ranges(kind: str, arrays) -> None:
    """Check every probability-like array of a model file of ``kind`` (:data:`VALUE_RANGES`):
    a wrong dtype, a non-finite value or a value out of range is a :class:`ModelFileError`
    naming the array, whatever the checksum says."""
    import re

    table = VALUE_RANGES.get(kind, {})
    if not table:
        return
    compiled = [(re.compile(pattern), _CHECKS[check]) for pattern, check in table.items()]
    for name in arrays:
        for pattern, check in compiled:
            if pattern.fullmatch(name):
                check(arrays[name], name)
                break
