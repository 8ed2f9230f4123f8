"""Versioned model files without pickle.

A model file is a NumPy ``.npz`` archive (zip) holding

* ``__meta__``: a UTF-8 JSON document ``{"format": "fastspectral-model", "version": 1,
  "kind": "<model kind>", "meta": {...}}`` stored as a uint8 array, and
* any number of plain numeric arrays (no object arrays: loading uses ``allow_pickle=False``).

Strings (symbol tables, vocabularies) go into ``meta`` as JSON lists.  ``load(path)`` reads the
header, looks the kind up in the one registry of model kinds (:mod:`fastspectral.models`) and calls
that class's ``_from_model_file(meta, arrays)``.
"""
from __future__ import annotations

import json
import os
import stat
import zipfile
import zlib

import numpy as np

from ..errors import ModelFileError

FORMAT_NAME = "fastspectral-model"
FORMAT_VERSION = 1

def save_model_file(path, kind: str, meta: dict, arrays: dict[str, np.ndarray]) -> None:
    """Write a model file.

    A regular file (or a new one) is written as ``PATH.part`` and renamed over ``PATH`` only when
    complete, so a failed or interrupted save never leaves a half-written model nor destroys the
    previous one; a device or FIFO (``/dev/null``, ``/dev/full``) is written directly (renaming
    over it would replace the device node).  Arrays are stored uncompressed: saving and loading
    cost no zlib time (``np.savez_compressed`` took most of a ``train`` run's saving time).
    """
    from .output import is_regular_target, part_path

    header = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "kind": kind, "meta": meta}
    payload = {"__meta__": np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)}
    for name, arr in arrays.items():
        if name == "__meta__":
            raise ValueError("array name __meta__ is reserved")
        arr = np.asarray(arr)
        if arr.dtype == object:
            raise TypeError(f"array {name!r} has dtype object; store strings in meta")
        payload[name] = arr
    path = os.fspath(path)
    if not is_regular_target(path):
        with open(path, "wb") as fh:
            np.savez(fh, **payload)
        return
    tmp = part_path(path)
    try:
        with open(tmp, "wb") as fh:
            np.savez(fh, **payload)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


#: arrays at least this large are memory-mapped from the file instead of read into memory
MMAP_MIN_BYTES = 1 << 20


def _check_crc(path, mapped, start: int, info) -> None:
    """Raise :class:`ModelFileError` unless the member ``info`` (``info.file_size`` bytes from
    offset ``start`` of ``mapped``, the whole file mapped read-only) has the CRC-32 the archive
    records for it.  ``np.load`` checks the members it reads (zipfile verifies the CRC-32 at the
    end of a member), but a memory-mapped member is never read through zipfile: without this a
    changed byte inside a large array would load as a silently different model."""
    crc = 0
    step = 1 << 24
    view = memoryview(mapped)
    try:
        for a in range(start, start + info.file_size, step):
            crc = zlib.crc32(view[a:min(a + step, start + info.file_size)], crc)
    finally:
        view.release()
    if crc != info.CRC:
        raise ModelFileError(f"{path}: corrupt or tampered model file (array "
                             f"{info.filename[:-4]!r} fails its CRC-32 check)")


def _mapped_arrays(path) -> dict:
    """Large arrays of ``path`` stored uncompressed, memory-mapped copy-on-write in place (the
    pages are shared by processes that load the same file): loading a model costs no copy of
    its big tensors.  Each mapped member's CRC-32 is checked once on loading (about 0.1 s per
    100 MB from the page cache), as ``np.load`` checks the members it reads.  Compressed members
    (files written by fastspectral before 0.1 used zlib) and small arrays are left to
    ``np.load``."""
    import mmap

    out = {}
    with zipfile.ZipFile(path) as zf, open(path, "rb") as fh:
        mapped = None
        for info in zf.infolist():
            name = info.filename
            if (info.compress_type != zipfile.ZIP_STORED or not name.endswith(".npy")
                    or info.file_size < MMAP_MIN_BYTES or name == "__meta__.npy"):
                continue
            fh.seek(info.header_offset)
            local = fh.read(30)
            if local[:4] != b"PK\x03\x04":
                continue
            n_name = int.from_bytes(local[26:28], "little")
            n_extra = int.from_bytes(local[28:30], "little")
            start = info.header_offset + 30 + n_name + n_extra
            fh.seek(start)
            version = np.lib.format.read_magic(fh)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
            elif version == (2, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
            else:
                continue
            if dtype.hasobject:
                raise ModelFileError(f"{path}: array {name[:-4]!r} holds Python objects")
            n_bytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            if fh.tell() + n_bytes > start + info.file_size:
                raise ModelFileError(f"{path}: array {name[:-4]!r} is truncated")
            if start + info.file_size > os.fstat(fh.fileno()).st_size:
                raise ModelFileError(f"{path}: array {name[:-4]!r} is truncated")
            if mapped is None:
                mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            try:
                _check_crc(path, mapped, start, info)
            except BaseException:
                mapped.close()
                raise
            out[name[:-4]] = np.memmap(path, dtype=dtype, mode="c", offset=fh.tell(),
                                       shape=shape, order="F" if fortran else "C")
        if mapped is not None:
            mapped.close()
    return out


def load_model_file(path, expected_kind: str | None = None):
    """Read a model file; returns ``(kind, meta, arrays)``.

    Raises :class:`ModelFileError` naming the file for a missing file, a file that is not a
    fastspectral model, an unsupported version, or a kind other than ``expected_kind``.
    """
    path = os.fspath(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ModelFileError(f"{path}: no such model file") from None
    except OSError as exc:
        raise ModelFileError(f"{path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        # a FIFO would block open() forever, a device read forever, a directory fail oddly
        raise ModelFileError(f"{path}: not a regular file")
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic[:2] != b"PK":
        raise ModelFileError(f"{path}: not a fastspectral model file (not an .npz archive)")
    try:
        with np.load(path, allow_pickle=False) as z:
            if "__meta__" not in z.files:
                raise ModelFileError(f"{path}: not a fastspectral model file (no header)")
            header = json.loads(bytes(z["__meta__"]).decode("utf-8"))
            arrays = _mapped_arrays(path)
            for k in z.files:
                if k != "__meta__" and k not in arrays:
                    arrays[k] = z[k]
    except ModelFileError:
        raise
    except Exception as exc:  # noqa: BLE001 - only the file's bytes are parsed here: a flipped
        # byte can make zipfile / numpy's header parser raise anything (BadZipFile, ValueError,
        # EOFError, tokenize.TokenError, SyntaxError, MemoryError for a claimed huge shape ...)
        raise ModelFileError(f"{path}: not a readable fastspectral model file "
                             f"({type(exc).__name__}: {exc})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise ModelFileError(f"{path}: not a fastspectral model file")
    version = header.get("version")
    if version != FORMAT_VERSION:
        raise ModelFileError(
            f"{path}: model file version {version} is not supported (this fastspectral reads "
            f"version {FORMAT_VERSION}); retrain the model with this version")
    kind = header.get("kind")
    if expected_kind is not None and kind != expected_kind:
        raise ModelFileError(f"{path}: this is a {kind!r} model, expected a {expected_kind!r} model")
    return kind, header.get("meta", {}), arrays


def load(path):
    """Load any fastspectral model file, returning the fitted model object."""
    kind, meta, arrays = load_model_file(path)
    from .. import models

    try:
        entry = models.get(kind)
    except (KeyError, TypeError):
        raise ModelFileError(f"{os.fspath(path)}: unknown model kind {kind!r}") from None
    return construct(entry.load_class(), kind, meta, arrays, path)


def construct(cls, kind: str, meta, arrays: dict, path):
    """``cls._from_model_file(meta, arrays)`` of the file ``path``, every failure of the
    loader (a bad array or meta entry) a :class:`ModelFileError` naming the file."""
    path = os.fspath(path)
    if not isinstance(meta, dict):
        raise ModelFileError(f"{path}: corrupt model file (its header has no meta)")
    try:
        from .validate import check_value_ranges

        check_value_ranges(kind, arrays)
        return cls._from_model_file(meta, arrays)
    except ModelFileError as exc:
        if str(exc).startswith(path + ":"):
            raise
        raise ModelFileError(f"{path}: {exc}") from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        what = f"missing entry {exc}" if isinstance(exc, KeyError) else str(exc)
        raise ModelFileError(f"{path}: corrupt or tampered {kind!r} model file "
                             f"({what})") from None
