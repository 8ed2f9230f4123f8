"""Shared set-up of the parsing benchmarks (``bench_dask_parse.py``, ``bench_parse_memory.py``):
the work folder, the PCFG trained on the WSJ sample, WSJ section 22's sentences repeated."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "data", "ptb"))


def trained_pcfg(train: str, pcfg: str, workdir: str | None, prefix: str):
    """``(work, v, h, model)``: the work folder (``workdir``, else a new temporary one named
    ``prefix...``) and the PCFG ``pcfg = "V,H"`` trained on ``train`` there (kept when it is
    already there)."""
    work = workdir or tempfile.mkdtemp(prefix=prefix)
    os.makedirs(work, exist_ok=True)
    v, h = pcfg.split(",")
    model = os.path.join(work, f"wsj-v{v}h{h}.pcfg")
    if not os.path.exists(model):
        subprocess.run([sys.executable, "-m", "fastspectral", "train", "pcfg", train,
                        "-o", model, "--v", v, "--h", h, "-q"], check=True)
    return work, v, h, model


def section22(path) -> list[str]:
    """The sentences (space-joined leaves) of the treebank ``path``."""
    from fastspectral.trees.readers import read_treebank

    return [" ".join(t.leaves()) for t in read_treebank(path)]


def corpus(path, sentences, n) -> None:
    """Write ``n`` lines: ``sentences`` repeated."""
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(sentences[i % len(sentences)] + "\n")
