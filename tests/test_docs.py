"""The documentation: the README's quick starts run as written, its model table names every
registry kind, docs/ARCHITECTURE.md lists every kind and CLI module, the guide's examples run as
doctests, and the Sphinx site builds with warnings as errors (skipped without Sphinx)."""
from __future__ import annotations

import doctest
import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from fastspectral import models

from conftest import subprocess_env

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
#: directories of docs/ written at build time (not sources)
GENERATED = {"_build", "api", "cli"}


def _blocks(text: str, lang: str) -> list[str]:
    """The fenced code blocks of ``text`` whose info string is ``lang`` ("" for bare fences)."""
    return [m.group(2) for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M)
            if m.group(1) == lang]


def _env():
    env = subprocess_env()
    env.setdefault("FASTSPECTRAL_THREADS", "2")
    return env


def _doc_sources() -> list[Path]:
    out = [README]
    for path in DOCS.rglob("*"):
        rel = path.relative_to(DOCS)
        if path.suffix in (".md", ".rst", ".py") and rel.parts[0] not in GENERATED:
            out.append(path)
    return out


# ---- README ---------------------------------------------------------------------------------
def test_readme_python_quick_start_runs(tmp_path):
    code = _blocks(README.read_text(encoding="utf-8"), "python")[0]
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("(TOP "), proc.stdout
    assert (tmp_path / "demo.fsm").exists()
    # the tree printed is the one the comment shows
    shown = re.search(r"print\(tree\)\s+# (\(TOP .*\))", code).group(1)
    assert proc.stdout.strip() == shown


def test_readme_command_line_quick_start_runs(tmp_path):
    text = README.read_text(encoding="utf-8")
    block = next(b for b in _blocks(text, "") if "fastspectral train" in b)
    lines = []
    for line in block.splitlines():
        words = shlex.split(line, comments=True)
        if words and words[0] == "fastspectral":
            line = shlex.join([sys.executable, "-m", "fastspectral", *words[1:]])
        elif words and words[0] == "python":
            line = shlex.quote(sys.executable) + line[len("python"):]
        lines.append(line)
    script = "set -e\n" + "\n".join(lines) + "\n"
    proc = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "model.fsm").exists()
    parsed = (tmp_path / "parsed.trees").read_text().split("\n")
    assert parsed[0].startswith("(TOP ") and parsed[0].count("(") == parsed[0].count(")")
    assert "Bracketing FMeasure" in proc.stdout


def test_readme_set_up_commands_unchanged():
    text = README.read_text(encoding="utf-8")
    assert "pip install . && fastspectral demo" in text
    assert 'pip install ".[test]" && pytest' in text


def test_readme_model_table_names_every_registry_kind():
    text = README.read_text(encoding="utf-8")
    section = text.split("## Which model for which job", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    named = {re.match(r"\| `([^`]+)`", row).group(1) for row in rows}
    assert named == set(models.REGISTRY), named ^ set(models.REGISTRY)
    for row in rows:           # every row: kind, what it learns, input, paper
        assert len([c for c in row.strip("|").split("|") if c.strip()]) == 4, row
    train = {name for e in models.REGISTRY.values() for name in e.train}
    assert train <= set(re.findall(r"`([\w-]+)`", section))


def test_readme_is_short_and_its_links_exist():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 160
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        if "://" not in target:
            assert (ROOT / target).exists(), target


def test_readme_result_commands_exist():
    text = README.read_text(encoding="utf-8")
    for script in set(re.findall(r"python ((?:benchmarks|experiments)/\w+\.py)", text)):
        assert (ROOT / script).exists(), script


# ---- words about how the work was done ------------------------------------------------------
_FORBIDDEN = [re.compile(p, re.I) for p in
              (r"\bsessions?\b(?!\s+(fixtures?|scope))", r"\bissues? #?\d", r"\bmet /", r"\bnot met\b", r"\bhelpers?'",
               r"previous (session|code)", r"\bthis work\b", r"\bNov(ember)? 2026\b",
               r"\b2026-\d\d-\d\d\b", r"\b\d\d? Nov\b")]


def test_no_words_about_how_the_work_was_organised():
    bad = []
    for path in _doc_sources():
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for pat in _FORBIDDEN:
                if pat.search(line):
                    bad.append(f"{path.relative_to(ROOT)}:{no}: {line.strip()[:100]}")
    assert not bad, "\n".join(bad[:40])


# ---- docs/ARCHITECTURE.md -------------------------------------------------------------------
def test_architecture_lists_every_cli_module_and_kind():
    text = (DOCS / "ARCHITECTURE.md").read_text(encoding="utf-8")
    layout = text.split("## Where things live", 1)[1].split("\n## ", 1)[0]
    cli = layout.split("  cli/", 1)[1].split("\n  io/", 1)[0]
    files = {p.name for p in (ROOT / "fastspectral" / "cli").glob("*.py")}
    # file names of the cli/ block; paths of other folders (tests/x.py) and the package's
    # __main__.py are mentioned there too
    listed = set(re.findall(r"(?<![/\w])(\w+\.py)\b", cli)) - {"__main__.py"}
    assert files == listed, files ^ listed
    kinds = text.split("## The registry", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`([\w-]+)`", kinds))
    assert set(models.REGISTRY) <= named, set(models.REGISTRY) - named
    ext = {p.name for p in (ROOT / "fastspectral" / "_ext").iterdir()
           if p.suffix in (".pyx", ".pxd", ".h") or p.name == "_status.py"}
    assert ext <= set(re.findall(r"\b(\w+\.(?:pyx|pxd|h|py))\b", layout)), ext


def test_architecture_files_exist():
    text = (DOCS / "ARCHITECTURE.md").read_text(encoding="utf-8")
    layout = text.split("```", 2)[1]
    named = set(re.findall(r"(?<![/\w])(\w+\.(?:py|pyx|pxd|h))\b", layout))
    have = {p.name for folder in ("fastspectral", "tests", "benchmarks", "experiments", "docs")
            for p in (ROOT / folder).rglob("*") if p.is_file()} | {"setup.py"}
    assert named <= have, named - have


def test_architecture_packages_exist():
    text = (DOCS / "ARCHITECTURE.md").read_text(encoding="utf-8")
    layout = text.split("```", 2)[1]
    for name in re.findall(r"^  (\w+)/", layout, re.M):
        assert (ROOT / "fastspectral" / name).is_dir(), name


# ---- the guide's examples -------------------------------------------------------------------
GUIDE = sorted([DOCS / "getting-started.md", *(DOCS / "guide").glob("*.md")])


@pytest.mark.parametrize("page", GUIDE, ids=[p.stem for p in GUIDE])
def test_guide_examples_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = page.read_text(encoding="utf-8")
    assert ">>> " in text, f"{page.name} has no example"
    # a fence closing an example is no part of its expected output
    text = re.sub(r"^```.*$", "", text, flags=re.M)
    parser = doctest.DocTestParser()
    test = parser.get_doctest(text, {}, page.name, str(page), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{page.name}: {result.failed} of {result.attempted} failed"


# ---- the Sphinx site ------------------------------------------------------------------------
def _have(*names):
    return all(importlib.util.find_spec(n) is not None for n in names)


@pytest.mark.slow
@pytest.mark.skipif(not _have("sphinx", "numpydoc", "furo", "myst_parser"),
                    reason="pip install '.[docs]'")
def test_sphinx_site_builds_without_warnings(tmp_path):
    out = tmp_path / "html"
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q",
                           "-b", "html", "-d", str(tmp_path / "doctrees"), str(DOCS), str(out)],
                          cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-6000:]
    assert (out / "index.html").exists()
    # the API reference covers every registry class, the CLI reference every command
    inv = (out / "objects.inv").read_bytes()
    import zlib
    body = zlib.decompress(inv.split(b"\n", 4)[4]).decode()
    for entry in models.REGISTRY.values():
        name = entry.target.replace(":", ".")
        assert f"{name} py:class" in body, name
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        import apiref
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    missing = []
    for package in apiref.PACKAGES:                # every public class and function
        mod = importlib.import_module(package)
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name, None)
            if isinstance(obj, type) or callable(obj) and hasattr(obj, "__qualname__"):
                names = (f"{obj.__module__}.{obj.__qualname__}", f"{package}.{name}")
                if not any(re.search(rf"^{re.escape(full)} py:(class|function|exception)",
                                     body, re.M) for full in names):
                    missing.append(names[0])
    assert not missing, missing
    for module in ("fastspectral.io.modelfile", "fastspectral.trees.readers"):
        assert f"{module} py:module" in body, module
    from fastspectral.cli import build_parser
    commands = next(a for a in build_parser()._actions if hasattr(a, "choices") and a.choices)
    for name in commands.choices:
        assert (out / "cli" / f"{name}.html").exists(), name
