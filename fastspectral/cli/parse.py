"""``fastspectral parse MODEL [INPUT] [-o OUTPUT]``: parse with a saved model, safely.

* Sentence models (``input_kind == "sentences"``) read one tokenised sentence a line (``word/TAG``
  tokens give the tags) and write one bracketed tree a line; dependency models read and write
  CoNLL-U / CoNLL-X / Malt-TAB.  Sequence models (language models, HMMs) do not parse.
* The input is read and parsed in chunks (constant memory); finished chunks are written at once,
  in input order, to ``OUTPUT.part``, renamed over ``OUTPUT`` when everything is done
  (:class:`fastspectral.io.output.SafeOutput`); Ctrl-C / SIGTERM stop after the chunk in flight,
  keeping every finished sentence in ``OUTPUT.part``; ``--resume`` continues from it.
"""
from __future__ import annotations

import itertools
import signal
import time

from . import kit

EPILOG = """\
input: one tokenised sentence a line; 'word/TAG' tokens give the part-of-speech tags
(the tag follows the last '/'); an empty line gives an empty output line.  Models of
dependency type read and write CoNLL-U, CoNLL-X or Malt-TAB instead.  '.gz' files are
read and written compressed.

The output is written as OUTPUT.part and renamed to OUTPUT at the end: an interrupted run
(Ctrl-C, SIGTERM, a crash) leaves OUTPUT untouched and every finished sentence in
OUTPUT.part; run the same command with --resume to continue from there.

examples:
  fastspectral parse wsj.pcfg sentences.txt -o parsed.trees
  echo "the dog saw a cat ." | fastspectral parse wsj.pcfg
  fastspectral parse wsj.pcfg tagged.txt --tagged yes --jobs 4 --progress
  fastspectral parse wsj.pcfg big.txt.gz -o big.trees.gz --resume
"""

#: sentences read, parsed and written at a time (bounded memory; enough for the threads to
#: balance their work)
PARSE_CHUNK = 2000

_DEP_WRITERS = {"conllu": "write_conllu", "conllx": "write_conllx", "malttab": "write_malttab"}


def add_parse_command(sub, common, fmt) -> None:
    from .._argtypes import positive_int

    p = sub.add_parser("parse", parents=[common], formatter_class=fmt, epilog=EPILOG,
                       help="parse sentences with a saved model",
                       description="Parse sentences (or dependency files) with a saved model.")
    p.add_argument("model", metavar="MODEL", help="model file written by 'fastspectral train'")
    p.add_argument("input", metavar="INPUT", nargs="?", default=None,
                   help="input file (default or '-': standard input)")
    p.add_argument("-o", "--output", metavar="OUTPUT", default=None,
                   help="output file (default or '-': standard output)")
    p.add_argument("--jobs", type=positive_int, default=None, metavar="N",
                   help="parsing threads (default: the model's setting, else every core)")
    p.add_argument("--tagged", choices=("auto", "yes", "no"), default="auto",
                   help="'word/TAG' tokens: auto = per line when every token has a tag, "
                        "yes = required, no = never split tokens (default: auto)")
    p.add_argument("--format", choices=("conllu", "conllx", "malttab"), default=None,
                   help="dependency input format (default: detected)")
    p.add_argument("--encoding", default="utf-8",
                   help="encoding of the input (default: utf-8; output is utf-8)")
    p.add_argument("--resume", action="store_true",
                   help="continue an interrupted run from OUTPUT.part")
    p.add_argument("--chunk-size", type=positive_int, default=PARSE_CHUNK, metavar="N",
                   help=f"sentences parsed and written at a time (default: {PARSE_CHUNK})")
    p.set_defaults(func=cmd_parse)


class _StopFlag:
    """SIGINT / SIGTERM set a flag: the run stops after the chunk in flight, keeping it."""

    def __init__(self):
        self.signum = None
        self._old = {}

    def __enter__(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self._old[sig] = signal.signal(sig, self._handler)
            except ValueError:  # not the main thread (embedded use)
                pass
        return self

    def _handler(self, signum, frame):
        if self.signum is not None:   # a second Ctrl-C: stop now
            raise KeyboardInterrupt
        self.signum = signum

    def __exit__(self, *exc):
        for sig, old in self._old.items():
            signal.signal(sig, old)
        return False


def cmd_parse(args) -> int:
    """``fastspectral parse``."""
    from ..io import load

    kit.require_file(args.model, "model file")
    kit.require_file(args.input, "input file")
    kit.require_output_path(args.output, "output file", inputs=[args.input, args.model])
    if args.resume and kit.is_stdio(args.output):
        raise kit.CommandError("--resume needs an output file (-o OUTPUT)")
    model = load(args.model)
    kind = getattr(model, "input_kind", "sentences")
    if kind == "sentences":
        return _parse_sentences(args, model)
    if kind == "dependency":
        return _parse_dependency(args, model)
    raise kit.CommandError(f"{args.model} holds a {type(model).__name__}, which does not parse "
                           "(sequence models are scored with 'fastspectral lm eval')")


def _input_name(args) -> str:
    return "<stdin>" if kit.is_stdio(args.input) else args.input


def _check_text_input(args) -> None:
    """A sentence model refuses a treebank file (CoNLL, Malt-TAB) given as plain text."""
    if kit.is_stdio(args.input):
        return
    from ..errors import FormatError
    from ..trees.readers import detect_format

    try:
        fmt = detect_format(args.input, args.encoding)
    except FormatError:
        return          # not a treebank: plain text
    if fmt in ("conllu", "conllx", "malttab"):
        raise kit.CommandError(f"{args.input} is a {fmt} dependency file, but this model parses "
                               "plain text (one tokenised sentence a line)")


def _chunks(iterable, size):
    it = iter(iterable)
    while True:
        chunk = list(itertools.islice(it, size))
        if not chunk:
            return
        yield chunk


def _run_chunks(args, chunks, parse_chunk, write_chunk, total, records) -> int:
    """Parse and write chunk by chunk into a SafeOutput; returns the exit status."""
    from ..io.output import SafeOutput

    skip = SafeOutput.resume_point(args.output, records=records) if args.resume else 0
    bar = kit.make_progress(args, "parsing")
    out = SafeOutput(args.output, resume=args.resume)
    done = skip
    t0 = time.perf_counter()
    n_parsed = 0
    try:
        with _StopFlag() as stop:
            for chunk in chunks(skip):
                base = done

                def progress(k, _total=None, _base=base):
                    bar(_base + k, total)

                out.write(write_chunk(chunk, parse_chunk(chunk, progress)))
                done += len(chunk)
                n_parsed += len(chunk)
                bar(done, total)
                if stop.signum is not None:
                    break
            interrupted = stop.signum
        if interrupted is None:
            out.commit()
    finally:
        bar.close()
        out.close()
    elapsed = time.perf_counter() - t0
    rate = n_parsed / elapsed if elapsed > 0 else float("inf")
    if interrupted is not None:
        where = f"; continue with --resume" if out.tmp else ""
        kit.logger.warning(f"interrupted: {done} sentences written to "
                           f"{out.tmp or 'the output'}{where}")
        return 130
    resumed = f" (resumed after {skip})" if skip else ""
    kit.logger.info(f"parsed {n_parsed} sentences{resumed} in {elapsed:.2f} s "
                    f"({rate:.1f} sentences/s)")
    return 0


def _parse_sentences(args, model) -> int:
    from ..trees.readers import iter_sentences
    from ..trees.files import iter_lines

    _check_text_input(args)
    tagged = {"auto": None, "yes": True, "no": False}[args.tagged]
    source = kit.stdin_source() if kit.is_stdio(args.input) else args.input
    total = None
    if not kit.is_stdio(args.input) and kit.progress_wanted(args):
        total = sum(1 for _ in iter_lines(args.input, args.encoding))

    def chunks(skip):
        stream = iter_sentences(source, tagged=tagged, encoding=args.encoding)
        return _chunks(itertools.islice(stream, skip, None), args.chunk_size)

    def parse_chunk(raw, progress):
        todo = [i for i, s in enumerate(raw) if s.words]
        words = [raw[i].words for i in todo]
        tags = None
        if any(raw[i].tags is not None for i in todo):
            tags = [raw[i].tags for i in todo]
        trees = model.parse(words, tags=tags, jobs=args.jobs, progress=progress) if words else []
        if len(trees) != len(words):
            raise kit.CommandError(f"the model returned {len(trees)} parses for {len(words)} "
                                   "sentences")
        out = [""] * len(raw)
        for i, t in zip(todo, trees):
            out[i] = "" if t is None else str(t)
        return out

    def write_chunk(raw, lines):
        return "".join(line + "\n" for line in lines)

    return _run_chunks(args, chunks, parse_chunk, write_chunk, total, "lines")


def _parse_dependency(args, model) -> int:
    import io

    from ..trees import conll
    from ..trees.readers import detect_format, read_treebank

    source = kit.stdin_source(whole=True) if kit.is_stdio(args.input) else args.input
    fmt = args.format or detect_format(source, args.encoding)
    if fmt not in _DEP_WRITERS:
        raise kit.CommandError(f"this model parses dependency files (CoNLL-U, CoNLL-X or "
                               f"Malt-TAB); {_input_name(args)} is {fmt!r}")
    writer = getattr(conll, _DEP_WRITERS[fmt])

    def chunks(skip):
        sents = read_treebank(source, format=fmt, encoding=args.encoding, heads_optional=True)
        return _chunks(itertools.islice(sents, skip, None), args.chunk_size)

    def parse_chunk(sents, progress):
        from .train import errors_in

        with errors_in(_input_name(args)):
            return model.parse(sents, jobs=args.jobs, progress=progress)

    def write_chunk(sents, parsed):
        buf = io.StringIO()
        writer(parsed, buf)
        return buf.getvalue()

    return _run_chunks(args, chunks, parse_chunk, write_chunk, None, "blocks")
