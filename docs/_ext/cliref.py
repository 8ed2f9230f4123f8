"""Sphinx extension: the command-line reference, written at build time from the argparse
parsers of :mod:`fastspectral.cli` (the parsers are the one source of truth; nothing is copied).

On ``builder-inited`` it walks :func:`fastspectral.cli.build_parser` -- every command, every
``train`` model type (built with its full options), the ``lm`` and ``lexical`` sub-commands --
and writes one Markdown page per command under ``docs/cli/`` (generated, not committed) plus
``docs/cli/index.md`` with their toctree.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

#: help text is wrapped at this width, whatever the terminal of the build
WIDTH = 96


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _help(parser: argparse.ArgumentParser) -> str:
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(WIDTH)
    try:
        return parser.format_help().rstrip() + "\n"
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


def _block(text: str) -> str:
    fence = "````" if "```" in text else "```"
    return f"{fence}text\n{text}{fence}\n"


def command_pages() -> dict[str, str]:
    """``{file stem: Markdown}`` for every command of the command line."""
    from fastspectral import models
    from fastspectral.cli import build_parser

    top = build_parser()
    commands = _subparsers(top)
    pages = {}
    for name, parser in commands.items():
        title = f"fastspectral {name}"
        parts = [f"# `{title}`\n", _block(_help(parser))]
        if name == "train":
            for tname in models.train_commands():
                full = _subparsers(_subparsers(build_parser(tname, "train"))["train"])[tname]
                parts += [f"\n## `fastspectral train {tname}`\n", _block(_help(full))]
        else:
            full_top = build_parser("lm" if name == "lm" else None, name)
            subs = _subparsers(_subparsers(full_top)[name])
            for sname, sparser in subs.items():
                parts += [f"\n## `fastspectral {name} {sname}`\n", _block(_help(sparser))]
        pages[name] = "\n".join(parts)
    index = ["# Command-line reference\n",
             "Generated from the command line's own parsers when the documentation is built: "
             "each page is the `--help` of a command and of its sub-commands.\n",
             _block(_help(top)), "```{toctree}\n:maxdepth: 1\n"]
    index += list(pages) + ["```\n"]
    pages["index"] = "\n".join(index)
    return pages


def write_pages(app) -> None:
    out = Path(app.srcdir) / "cli"
    out.mkdir(exist_ok=True)
    for stem, text in command_pages().items():
        path = out / f"{stem}.md"
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")


def setup(app):
    app.connect("builder-inited", write_pages)
    return {"version": "1", "parallel_read_safe": True}
