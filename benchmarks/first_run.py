"""First run against second run of every ``train`` / ``parse`` command of every model kind.

A new user's first command after ``pip install`` finds the Numba cache in whatever state the
install left it; this script measures, for every ``fastspectral train NAME`` of the registry and
the ``parse`` (or ``lm eval``) of the model it wrote, two whole processes in a row: the first with
the Numba cache as installed (``--reset``: every ``.nbi`` / ``.nbc`` file under the installed
package restored to what it held when the script started, before each command's first run; a
fresh ``NUMBA_CACHE_DIR`` too), the second right after it.  Times are ``/usr/bin/time``'s user +
system CPU seconds and wall seconds of the whole process (imports, reading, compiling, fitting,
writing).

Run it with the interpreter of an installed copy (a venv where ``pip install .`` put the package),
not a source checkout::

    /work/venv/bin/python -m venv --system-site-packages /tmp/v
    /tmp/v/bin/pip install --no-deps --no-build-isolation .
    python benchmarks/first_run.py --python /tmp/v/bin/python --reset --json after.json

Data: the small sets of ``../shared/data`` (``--data``), cut to ``--sentences`` items for training
(the WSJ sample, its dependency version, UD EWT dev, the Brown corpus, the Arabic PADT dev) plus
``--parse-sentences`` held-out items to parse.  ``--only NAME,...`` runs some commands.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data"

#: train NAME -> (data set, extra options of the train command); options keep runs short
#: but exercise each learner's default method
COMMANDS = {
    "pcfg": ("ptb", []),
    "spectral": ("ptb", ["--states", "8"]),
    "pivot": ("ptb", ["--states", "8"]),
    "em": ("ptb", ["--states", "8", "--iterations", "5"]),
    "pivot-em": ("ptb", ["--states", "8", "--iterations", "5"]),
    "shag": ("ud", []),
    "lm": ("brown", ["--states", "8"]),
    "kn-lm": ("brown", []),
    "hmm": ("brown", ["--states", "8"]),
    "lexical": ("arabic", []),
    "eigenwords": ("brown", []),
    "brown": ("brown", []),
    "atm": ("ptb", []),
    "ccm": ("ptb", []),
    "mst": ("dep", []),
    "rerank-dep": ("dep", []),
    "latent-dep": ("dep", []),
}

SOURCES = {"ptb": "ptb/wsj-sample.mrg", "dep": "dep/wsj-sample.dp",
           "ud": "ud/en_ewt-ud-dev.conllu", "brown": "brown/brown-tagged.txt",
           "arabic": "arabic/padt-v1.3-dev.conllu"}


def _items(name: str, text: str) -> list[str]:
    """The items of a data file as text blocks: trees, blank-line separated sentences, lines."""
    if name == "ptb":
        items, cur = [], []
        for line in text.splitlines(keepends=True):
            if line.startswith("(") and cur:
                items.append("".join(cur))
                cur = []
            cur.append(line)
        if cur:
            items.append("".join(cur))
        return items
    if name == "brown":
        return [line + "\n" for line in text.splitlines() if line.strip()]
    return [b.strip("\n") + "\n\n" for b in text.split("\n\n") if b.strip()]


def prepare(data: Path, work: Path, n_train: int, n_parse: int) -> dict:
    """Training and parse files of every data set under ``work``: {name: (train, parse)}."""
    out = {}
    for name, rel in SOURCES.items():
        items = _items(name, (data / rel).read_text(encoding="utf-8"))
        train, held = items[:n_train], items[n_train:n_train + n_parse]
        ext = Path(rel).suffix
        tr, pa = work / f"{name}-train{ext}", work / f"{name}-parse{ext}"
        tr.write_text("".join(train), encoding="utf-8")
        pa.write_text("".join(held), encoding="utf-8")
        out[name] = (tr, pa)
    return out


def package_dir(python: str, cwd: Path, env: dict) -> Path:
    code = "import os, fastspectral; print(os.path.dirname(fastspectral.__file__))"
    return Path(subprocess.check_output([python, "-c", code], text=True, cwd=cwd,
                                        env=env).strip())


class CacheState:
    """The Numba cache files (``.nbi`` / ``.nbc``) under the installed package: a snapshot
    taken once, restored before each first run."""

    def __init__(self, pkg: Path, store: Path):
        self.pkg, self.store = pkg, store
        for f in self._files():
            dst = store / f.relative_to(pkg)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, dst)
        self.count = sum(1 for _ in store.rglob("*.nb?"))

    def _files(self):
        return [p for p in self.pkg.rglob("*") if p.suffix in (".nbi", ".nbc")]

    def restore(self):
        for f in self._files():
            f.unlink()
        for f in self.store.rglob("*"):
            if f.is_file():
                dst = self.pkg / f.relative_to(self.store)
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, dst)


def cache_summary(root: Path) -> list[tuple[str, int]]:
    """(index file, number of compiled signatures) of every Numba index under ``root``: what a
    first run compiles (an index holds one entry per signature)."""
    import pickle

    out = []
    for idx in sorted(root.rglob("*.nbi")):
        with open(idx, "rb") as f:
            pickle.load(f)  # the Numba version
            _, overloads = pickle.loads(f.read())
        out.append((str(idx.relative_to(root)), len(overloads)))
    return out


def timed(cmd: list, env: dict, log: Path) -> dict:
    """Run ``cmd`` under /usr/bin/time; CPU seconds (user + system), wall seconds, max RSS."""
    tfile = log.with_suffix(".time")
    with open(log, "w") as err:
        rc = subprocess.call(["/usr/bin/time", "-o", str(tfile), "-f", "%U %S %e %M"] + cmd,
                             env=env, stdout=subprocess.DEVNULL, stderr=err, cwd=log.parent)
    user, system, wall, rss = tfile.read_text().split()[-4:]
    return {"rc": rc, "cpu": float(user) + float(system), "wall": float(wall),
            "rss_mb": int(rss) / 1024}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", default=sys.executable,
                    help="interpreter of the installed package (default: this one)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--work", type=Path, default=None, help="folder for data and models")
    ap.add_argument("--sentences", type=int, default=1000, help="training items per data set")
    ap.add_argument("--parse-sentences", type=int, default=50)
    ap.add_argument("--only", default="", help="comma-separated train names")
    ap.add_argument("--reset", action="store_true",
                    help="restore the installed Numba cache before each first run")
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    ap.add_argument("--signatures", type=Path, default=None, metavar="CACHE_DIR",
                    help="print the compiled functions and signatures in a Numba cache folder "
                         "(e.g. fastspectral/_jitcache after a warm-up) and exit")
    args = ap.parse_args(argv)
    if args.signatures:
        rows = cache_summary(args.signatures)
        by_dir: dict = {}
        for name, n in rows:
            print(f"{n:3d}  {name}")
            d = by_dir.setdefault(Path(name).parent.name, [0, 0])
            d[0] += 1
            d[1] += n
        print(f"{len(rows)} functions, {sum(n for _, n in rows)} signatures; by folder: "
              + ", ".join(f"{k} {v[0]}/{v[1]}" for k, v in sorted(by_dir.items())))
        return 0

    work = args.work or Path(tempfile.mkdtemp(prefix="first_run_"))
    work.mkdir(parents=True, exist_ok=True)
    files = prepare(args.data, work, args.sentences, args.parse_sentences)
    work = work.resolve()
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.pop("NUMBA_CACHE_DIR", None)
    pkg = package_dir(args.python, work, env)
    state = CacheState(pkg, work / "cache-snapshot") if args.reset else None
    print(f"package: {pkg}" + (f" ({state.count} cache files installed)" if state else ""),
          flush=True)
    names = [n for n in COMMANDS if not args.only or n in args.only.split(",")]
    fs = [args.python, "-m", "fastspectral"]
    results = []

    def measure(label, cmd):
        row = {"command": label}
        for run in ("first", "second"):
            if run == "first" and state:
                state.restore()
                user_dir = work / "numba-user-cache"
                shutil.rmtree(user_dir, ignore_errors=True)
                env["NUMBA_CACHE_DIR"] = str(user_dir)
            row[run] = timed(cmd, env, work / f"{label.replace(' ', '_')}.{run}.log")
        results.append(row)
        f, s = row["first"], row["second"]
        print(f"| {label} | {f['cpu']:.1f} | {f['wall']:.1f} | {s['cpu']:.1f} | {s['wall']:.1f} "
              f"| {f['cpu'] / max(s['cpu'], 1e-9):.2f} |" + ("" if f["rc"] == s["rc"] == 0
                                                               else f" rc {f['rc']}/{s['rc']}"),
              flush=True)

    print("| command | first CPU-s | first wall s | second CPU-s | second wall s | ratio (CPU) |")
    print("| --- | --- | --- | --- | --- | --- |", flush=True)
    for name in names:
        data, extra = COMMANDS[name]
        train, held = files[data]
        model = work / f"{name}.model"
        measure(f"train {name}", fs + ["train", name, str(train), "-o", str(model), "-q"] + extra)
        if name in ("eigenwords", "brown"):
            continue  # word vectors: no parse or scoring command
        if name in ("lm", "kn-lm", "hmm"):
            cmd = fs + ["lm", "eval", str(model), str(held)]
        elif data == "ptb":
            cmd = fs + ["parse", str(model), str(held), "--input", "trees", "-q",
                        "-o", str(work / f"{name}.out")]
        else:  # (the scores of a latent-dep parse need CoNLL output)
            cmd = fs + ["parse", str(model), str(held), "-q", "-o", str(work / f"{name}.out"),
                        "--output-format", "conllu"]
        measure(f"parse {name}", cmd)
    if args.json:
        args.json.write_text(json.dumps({"package": str(pkg), "results": results}, indent=1))
    bad = [r["command"] for r in results if r["first"]["rc"] or r["second"]["rc"]]
    if bad:
        print("failed: " + ", ".join(bad) + f" (logs in {work})", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
