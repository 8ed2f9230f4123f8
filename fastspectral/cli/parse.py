"""``fastspectral parse MODEL [INPUT...] [-o OUTPUT]``: parse with a saved model, safely.

* Sentence models (``input_kind == "sentences"``) read one tokenised sentence a line (``word/TAG``
  tokens give the tags; ``--tokenize``: raw text; ``--input trees``: the words of a PTB
  treebank) and write one bracketed tree a line; a line that is a bracketed tree is refused.
  Dependency models read CoNLL-U / CoNLL-X / Malt-TAB (written back as they are, or as
  ``--output-format``) or ``word/TAG`` text (written as CoNLL-U).  Sequence models (language
  models, HMMs) do not parse.
* The input is read and parsed in chunks (constant memory); finished chunks are written at once,
  in input order, to ``OUTPUT.part``, renamed over ``OUTPUT`` when everything is done
  (:class:`fastspectral.io.output.SafeOutput`); Ctrl-C / SIGTERM stop after the chunk in flight,
  keeping every finished sentence in ``OUTPUT.part``; ``--resume`` continues from it.
* Several inputs (or ``-o`` naming a folder) give one output per input, named like it, in the
  folder ``-o OUTDIR``; ``--scheduler ADDRESS`` / ``--dask-workers N`` parse on a Dask cluster
  (:func:`fastspectral.dask.parse_files`: chunks are tasks, written in order as they finish).
"""
from __future__ import annotations

import os
import re
import signal
import time

from . import kit

EPILOG = """\
input: one tokenised sentence a line (Penn Treebank tokens: 'do n't', 'dog .'); 'word/TAG'
tokens give the part-of-speech tags (the tag follows the last '/'); an empty line gives an
empty output line.  Raw text: --tokenize splits it into Penn Treebank tokens; without it,
tokens with punctuation or a clitic attached ('Hello,', "don't") are counted and reported
in one warning.  A line that is a bracketed tree is an error: --input trees parses the words
of a PTB treebank (one output line per tree), 'fastspectral sentences' writes them as text.
Models of dependency type read CoNLL-U, CoNLL-X or Malt-TAB (written back in the same
format, or --output-format), or text of word/TAG tokens, one sentence a line, written as
CoNLL-U (the lexical tagger reads plain words; empty lines are skipped).  '.gz' files are
read and written compressed.

The output is written as OUTPUT.part and renamed to OUTPUT at the end: an interrupted run
(Ctrl-C, SIGTERM, a crash) leaves OUTPUT untouched and every finished sentence in
OUTPUT.part; run the same command with --resume to continue from there.

Several input files (or -o naming an existing folder) give one output per input in the
folder OUTDIR, named like its input; with --resume, outputs already finished are kept.
--scheduler ADDRESS (or a scheduler file) parses on a Dask cluster, --dask-workers N on a
local one; each worker process loads the model once (the file is sent to the workers) and
parses with --jobs threads per task (default: its host's cores / task threads).  See
docs/scale.md.

examples:
  fastspectral parse wsj.pcfg sentences.txt -o parsed.trees
  echo "the dog saw a cat ." | fastspectral parse wsj.pcfg
  fastspectral parse wsj.pcfg tagged.txt --tagged yes --jobs 4 --progress
  fastspectral parse wsj.pcfg raw.txt --tokenize
  fastspectral parse wsj.pcfg wsj22.trees --input trees -o wsj22.parsed
  fastspectral parse wsj.mst tagged.txt -o parsed.conllu
  fastspectral parse wsj.pcfg big.txt.gz -o big.trees.gz --resume
  fastspectral parse wsj.pcfg part-*.txt -o parsed/
  fastspectral parse wsj.pcfg part-*.txt.gz -o parsed/ --scheduler tcp://10.0.0.1:8786
  fastspectral parse wsj.pcfg big.txt -o big.trees --dask-workers 4
"""

#: sentences read, parsed and written at a time (bounded memory; enough for the threads to
#: balance their work)
PARSE_CHUNK = 2000
#: sentences of one Dask task (fastspectral.dask.parse.DASK_CHUNK)
DASK_CHUNK = 500

_DEP_WRITERS = {"conllu": "write_conllu", "conllx": "write_conllx", "malttab": "write_malttab"}


def add_parse_command(sub, common, fmt) -> None:
    from .._argtypes import positive_int

    p = sub.add_parser("parse", parents=[common], formatter_class=fmt, epilog=EPILOG,
                       help="parse sentences with a saved model",
                       description="Parse sentences (or dependency files) with a saved model.")
    kit.reads(p.add_argument("model", metavar="MODEL",
                             help="model file written by 'fastspectral train'"), regular=True)
    kit.reads(p.add_argument("input", metavar="INPUT", nargs="*", default=None,
                             help="input file(s) (default or '-': standard input)"))
    kit.writes(p.add_argument("-o", "--output", metavar="OUTPUT", default=None,
                   help="output file (default or '-': standard output); for several inputs "
                        "a folder OUTDIR: one output per input, named like it"))
    p.add_argument("--jobs", type=positive_int, default=None, metavar="N",
                   help="parsing threads (default: the model's setting, else every core)")
    p.add_argument("--tagged", choices=("auto", "yes", "no"), default="auto",
                   help="'word/TAG' tokens: auto = per line when every token has a tag, "
                        "yes = required, no = never split tokens (default: auto)")
    p.add_argument("--format", choices=("conllu", "conllx", "malttab"), default=None,
                   help="dependency input format (default: detected; a file in none of them "
                        "is read as text, one sentence a line)")
    add_input_options(p)
    kit.add_encoding(p, help="encoding of the input (default: utf-8; output is utf-8)")
    p.add_argument("--resume", action="store_true",
                   help="continue an interrupted run from OUTPUT.part")
    p.add_argument("--chunk-size", type=positive_int, default=None, metavar="N",
                   help=f"sentences parsed and written at a time, one Dask task (default: "
                        f"{PARSE_CHUNK}; {DASK_CHUNK} with Dask)")
    p.add_argument("--no-rerank", action="store_true",
                   help="rerank-dep models: the base parser's best tree, not re-ranked")
    kit.add_max_memory(p)
    g = p.add_argument_group("Dask (pip install 'fastspectral[dask]')")
    d = g.add_mutually_exclusive_group()
    kit.reads(d.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="parse on the Dask cluster of this scheduler (tcp://HOST:8786, or "
                        "the JSON file of dask-scheduler --scheduler-file)"), address=True)
    d.add_argument("--dask-workers", type=positive_int, default=None, metavar="N",
                   help="parse on a local Dask cluster of N worker processes, 1 thread each")
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


def add_input_options(p) -> None:
    """``--input``, ``--tokenize``, ``--output-format``: what the input is and how it is read."""
    p.add_argument("--input", dest="input_type", choices=("text", "trees"), default="text",
                   help="text: one tokenised sentence a line; trees: a bracketed treebank "
                        "(PTB) whose words are parsed, -NONE- elements removed (with "
                        "--tagged yes also its tags) (default: text)")
    p.add_argument("--tokenize", action="store_true",
                   help="the input is raw text: split it into Penn Treebank tokens first "
                        "(punctuation, n't and 's, quotes as `` and '')")
    p.add_argument("--output-format", choices=("conllu", "conllx", "malttab"), default=None,
                   help="dependency models: output format (default: the input's; CoNLL-U for "
                        "text input)")


def cmd_parse(args) -> int:
    """``fastspectral parse``."""
    from ..io import load

    inputs = list(args.input or []) or ["-"]
    dask = args.scheduler is not None or args.dask_workers is not None
    to_folder = len(inputs) > 1 or (not kit.is_stdio(args.output) and (
        os.path.isdir(args.output) or args.output.endswith(("/", os.sep))))
    if to_folder or dask:
        return _parse_files(args, inputs, to_folder, dask)
    args.input = inputs[0]
    args.chunk_size = args.chunk_size or PARSE_CHUNK
    kit.require_file(args.model, "model file")
    kit.require_file(args.input, "input file")
    kit.require_output_path(args.output, "output file", inputs=[args.input, args.model])
    if args.resume and kit.is_stdio(args.output):
        raise kit.CommandError("--resume needs an output file (-o OUTPUT)")
    model = load(args.model)
    kit.apply_max_memory(args, model)
    if getattr(args, "no_rerank", False):
        if not hasattr(model, "rerank"):
            raise kit.CommandError(f"--no-rerank: {args.model} holds a {type(model).__name__}, "
                                   "not a re-ranking parser (rerank-dep)")
        model.rerank = False
    kind = getattr(model, "input_kind", "sentences")
    if kind == "sentences":
        return _parse_sentences(args, model)
    if kind == "dependency":
        return _parse_dependency(args, model)
    raise kit.does_not_parse(args.model, getattr(model, "kind", None) or "",
                             type(model).__name__)


def _parse_files(args, inputs, to_folder, dask) -> int:
    """Several inputs (one output each in the folder -o OUTDIR), or any input with Dask."""
    if getattr(args, "no_rerank", False):
        raise kit.CommandError("--no-rerank works with one input file and without Dask")
    _one_input_only(args)
    kit.require_file(args.model, "model file")
    for inp in inputs:
        kit.require_file(inp, "input file")
    if to_folder:
        if kit.is_stdio(args.output):
            raise kit.CommandError("several inputs need -o OUTDIR: one output per input, "
                                   "named like it, in the folder OUTDIR")
        if "-" in inputs:
            raise kit.CommandError("standard input ('-') cannot be one of several inputs")
    else:
        kit.require_output_path(args.output, "output file", inputs=[inputs[0], args.model])
        if args.resume and kit.is_stdio(args.output):
            raise kit.CommandError("--resume needs an output file (-o OUTPUT)")
    from ..io.pipeline import check_paths, model_input_kind, outputs_in

    # every check before a cluster is started or reached
    model_kind, input_kind = model_input_kind(args.model)
    if input_kind not in ("sentences", "dependency"):
        raise kit.does_not_parse(args.model, model_kind)
    _check_files_input(args, inputs)
    outputs = outputs_in(inputs, args.output) if to_folder else [args.output]
    check_paths(inputs, [None if kit.is_stdio(o) else o for o in outputs],
                 os.path.abspath(args.model))

    tagged = {"auto": None, "yes": True, "no": False}[args.tagged]
    memory = kit.max_memory_env(args).__enter__()   # local workers read --max-memory from it
    if dask:
        from ..dask.parse import parse_files

        client, cluster, started = _dask_client(args)
    else:
        from ..io.pipeline import parse_files

        client, cluster, started = None, None, 0.0
    bar = kit.make_progress(args, "parsing")
    where = {} if client is None else {"client": client}
    try:
        with _StopFlag() as stop:
            res = parse_files(inputs, args.model, outputs=outputs, **where,
                              jobs=args.jobs, chunk_size=args.chunk_size, resume=args.resume,
                              tagged=tagged, encoding=args.encoding, format=args.format,
                              progress=bar if kit.progress_wanted(args) else None,
                              stop=lambda: stop.signum is not None)
    except Exception as exc:
        if type(exc).__name__ == "KilledWorker":
            raise kit.CommandError(f"a Dask worker died while parsing ({exc}); the finished "
                                   "sentences are kept: run again with --resume") from None
        raise
    finally:
        bar.close()
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
        memory.__exit__(None, None, None)
    for path in res.complete:
        kit.logger.info(f"{path} is complete: kept")
    if res.interrupted:
        parts = [o + ".part" for o in res.outputs if o and os.path.exists(o + ".part")]
        kit.logger.warning(f"interrupted: {res.sentences} sentences parsed this run, kept in "
                           f"{', '.join(parts) or 'the outputs'}; continue with --resume")
        return 130
    rate = res.sentences / res.seconds if res.seconds > 0 else float("inf")
    where = ""
    if client is not None:
        threads = sorted(set(res.threads.values()))
        where = (f" on {res.workers} Dask workers ({'/'.join(map(str, threads))} thread(s) "
                 f"per task; {res.tasks} tasks; cluster ready in {started:.2f} s)")
    resumed = sum(res.resumed.values())
    resumed = f" (resumed after {resumed})" if resumed else ""
    n_out = sum(1 for _ in res.outputs) - len(res.complete)
    kit.logger.info(f"parsed {res.sentences} sentences{resumed} into {n_out} output(s) in "
                    f"{res.seconds:.2f} s ({rate:.1f} sentences/s){where}")
    return 0


def _dask_client(args):
    """``(client, cluster or None, seconds to get it)`` for --scheduler / --dask-workers
    (:func:`fastspectral.dask.client.connect`)."""
    from ..dask.client import connect

    try:
        return connect(args.scheduler if args.dask_workers is None else None,
                       args.dask_workers)
    except ImportError:
        raise kit.CommandError("--scheduler and --dask-workers need Dask: pip install "
                               "'fastspectral[dask]' (dask[distributed])") from None
    except (OSError, ValueError) as exc:
        if args.dask_workers is not None:
            raise
        raise kit.CommandError(f"cannot reach the Dask scheduler {args.scheduler}: "
                               f"{kit.describe(exc)}") from None


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


def _run_chunks(args, chunks, parse_chunk, write_chunk, total, records) -> int:
    """Parse and write chunk by chunk into a SafeOutput; returns the exit status."""
    from ..io.output import SafeOutput, is_regular_target
    from ..io.pipeline import check_resume, count_lines, durable_write, part_origin

    origin = None
    if not kit.is_stdio(args.output) and is_regular_target(args.output):
        origin = part_origin(args.input, args.model)      # kept beside OUTPUT.part
    skip = 0
    if args.resume:
        length = None
        if records == "lines" and not kit.is_stdio(args.input):
            length = count_lines(args.input)
        skip = check_resume(args.output, origin, records=records, total=length)
    if total is not None:
        total = max(0, total - skip)   # the bar counts this run's sentences: rate and ETA hold
    bar = kit.make_progress(args, "parsing")
    out = SafeOutput(args.output, resume=args.resume, origin=origin)
    done = skip
    t0 = time.perf_counter()
    n_parsed = 0
    try:
        with _StopFlag() as stop:
            for chunk in chunks(skip):
                base = n_parsed

                def progress(k, _total=None, _base=base):
                    bar(_base + k, total)

                durable_write(out, write_chunk(chunk, parse_chunk(chunk, progress)))
                done += len(chunk)
                n_parsed += len(chunk)
                bar(n_parsed, total)
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
        where = "; continue with --resume" if out.tmp else ""
        kit.logger.warning(f"interrupted: {done} sentences written to "
                           f"{out.tmp or 'the output'}{where}")
        return 130
    resumed = f" (resumed after {skip})" if skip else ""
    kit.logger.info(f"parsed {n_parsed} sentences{resumed} in {elapsed:.2f} s "
                    f"({rate:.1f} sentences/s)")
    return 0


def _parse_sentences(args, model) -> int:
    if args.output_format is not None:
        raise kit.CommandError(f"--output-format is for dependency models; {args.model} "
                               "writes bracketed trees")
    _check_text_input(args)
    source = kit.stdin_source() if kit.is_stdio(args.input) else args.input
    total = None
    if not kit.is_stdio(args.input) and kit.progress_wanted(args) and args.input_type == "text":
        from ..io.pipeline import count_lines    # raw bytes, .gz decompressed

        total = count_lines(args.input)
    glued = _Untokenized(_input_name(args))
    trees = args.input_type == "trees"

    def chunks(skip):
        from ..io.pipeline import chunked, skip_records

        stream = _tree_sentences(args, source) if trees else \
            _text_sentences(args, source, glued)
        return chunked(skip_records(stream, skip, args.output, _input_name(args)),
                       args.chunk_size)

    def origin(raw):
        return f"{_input_name(args)}: tree {raw.line}" if trees else \
            f"{_input_name(args)}:{raw.line}"

    def parse_chunk(raw, progress):
        todo = [i for i, s in enumerate(raw) if s.words]
        words = [raw[i].words for i in todo]
        tags = None
        if any(raw[i].tags is not None for i in todo):
            tags = [raw[i].tags for i in todo]
        from .._memory import sentence_origins

        with sentence_origins([origin(raw[i]) for i in todo]):
            trees = model.parse(words, tags=tags, jobs=args.jobs, progress=progress) \
                if words else []
        flat[0] += getattr(getattr(model, "last_parse_stats_", None), "flat_fallbacks", 0) \
            if words else 0
        if len(trees) != len(words):
            raise kit.CommandError(f"the model returned {len(trees)} parses for {len(words)} "
                                   "sentences")
        out = [""] * len(raw)
        for i, t in zip(todo, trees):
            out[i] = "" if t is None else str(t)
        return out

    def write_chunk(raw, lines):
        return "".join(line + "\n" for line in lines)

    flat = [0]
    status = _run_chunks(args, chunks, parse_chunk, write_chunk, total, "lines")
    glued.report()
    if flat[0]:
        kit.logger.warning(f"{flat[0]} sentence(s) have no parse under the grammar: written as "
                           "flat trees over the best tags")
    return status


#: a line that opens like a bracketed tree: ``(TOP (S``, ``( (S``, ``(S (NP``
_TREE_LINE = re.compile(r"^\(\s*(?:\(|[^\s()]+\s*\()")

_TAGGED = {"auto": None, "yes": True, "no": False}


class _Untokenized:
    """Counts the tokens that look untokenised (punctuation or a clitic glued to a word) and
    warns once, at the end, with their number and the first of them."""

    def __init__(self, name):
        self.name = name
        self.count = 0
        self.lines = 0
        self.first = None

    def check(self, words, line) -> None:
        from ..trees.tokenize import untokenized

        bad = untokenized(words)
        if bad:
            self.count += len(bad)
            self.lines += 1
            if self.first is None:
                self.first = (bad[0], line)

    def report(self) -> None:
        if not self.count:
            return
        word, line = self.first
        kit.logger.warning(
            f"warning: {self.count} token(s) on {self.lines} line(s) look untokenised "
            f"(punctuation or a clitic attached to a word, e.g. {word!r} at {self.name}:"
            f"{line}); the input should be tokenised like the Penn Treebank: pass --tokenize "
            f"to split raw text")


def _text_sentences(args, source, glued: _Untokenized, skip_empty: bool = False):
    """The ``RawSentence`` items of text input: tokenised (``--tokenize``) or checked for
    untokenised tokens; a line that is a bracketed tree is an error naming ``--input trees``."""
    from ..errors import FormatError
    from ..trees.readers import RawSentence, iter_sentences

    tagged = _TAGGED[args.tagged]
    if args.tokenize:
        if tagged:
            raise kit.CommandError("--tokenize reads raw text: it does not go with --tagged yes")
        from ..trees.tokenize import tokenize

        for raw in iter_sentences(source, tagged=False, encoding=args.encoding,
                                  skip_empty=skip_empty):
            yield RawSentence(tokenize(" ".join(raw.words)), None, raw.line) \
                if raw.words else raw
        return
    for raw in iter_sentences(source, tagged=tagged, encoding=args.encoding,
                              skip_empty=skip_empty):
        if raw.words and raw.words[0].startswith("(") and raw.tags is None \
                and _TREE_LINE.match(" ".join(raw.words[:3])):
            raise FormatError("this line is a bracketed tree, not a sentence: pass --input "
                              "trees to parse the words of a treebank (or write them out "
                              "with 'fastspectral sentences')", _input_name(args), raw.line)
        glued.check(raw.words, raw.line)
        yield raw


def _tree_sentences(args, source):
    """``RawSentence(words, tags or None, k)`` of the k-th tree (1-based) of a bracketed
    treebank; -NONE- elements are removed, a tree with no words left gives an empty line."""
    from ..trees.ptb import read_ptb
    from ..trees.readers import RawSentence
    from ..trees.transforms import clean

    if args.tokenize:
        raise kit.CommandError("--tokenize is for raw text; the words of --input trees are "
                               "tokenised already")
    tagged = _TAGGED[args.tagged]
    for k, tree in enumerate(read_ptb(source, encoding=args.encoding), 1):
        try:
            pos = clean(tree).pos()
        except ValueError:          # nothing but -NONE- elements
            pos = []
        words = [w for w, _ in pos]
        yield RawSentence(words, [t for _, t in pos] if tagged and pos else None, k)


def _one_input_only(args) -> None:
    """Options of the one-input path refused with several inputs or Dask."""
    for flag, given in (("--input trees", args.input_type == "trees"),
                        ("--tokenize", args.tokenize),
                        ("--output-format", args.output_format is not None)):
        if given:
            raise kit.CommandError(f"{flag} works with one input file and without Dask")


def _check_files_input(args, inputs) -> None:
    """The checks of the one-input path that the several-inputs / Dask path can make before
    it starts: no bracketed trees for a sentence model (``--input trees`` reads them, one
    input at a time), a dependency file (not text) for a dependency model, no Malt-TAB for the
    scores of a latent-dep model (they are comment lines)."""
    from ..io.pipeline import model_input_kind
    from ..errors import FormatError
    from ..trees.readers import detect_format

    kind, input_kind = model_input_kind(args.model)
    for inp in inputs:
        if kit.is_stdio(inp):
            continue
        if input_kind == "sentences":
            line = kit.first_line(inp, args.encoding)
            if line is not None and _TREE_LINE.match(line):
                raise kit.CommandError(f"{inp} holds bracketed trees, not sentences: parse it "
                                       "alone with --input trees (or write its sentences "
                                       "with 'fastspectral sentences')")
            continue
        try:
            fmt = args.format or detect_format(inp, args.encoding)
        except FormatError:
            fmt = "text"
        if fmt not in _DEP_WRITERS:
            raise kit.CommandError(f"{inp} is not a CoNLL-U, CoNLL-X or Malt-TAB file: text "
                                   "input of a dependency model is parsed one file at a time "
                                   "(without -o OUTDIR or Dask)")
        if fmt == "malttab" and kind == "latent-dep":
            raise kit.CommandError(f"{inp} is Malt-TAB, which has no comment lines for the "
                                   "scores of a latent-dep model: parse it alone with "
                                   "--output-format conllx (or conllu)")


def _parse_dependency(args, model) -> int:
    import io

    from ..errors import FormatError
    from ..trees.readers import detect_format, read_treebank

    if args.input_type == "trees":
        raise kit.CommandError(f"--input trees is for models that parse sentences; "
                               f"{args.model} holds a {type(model).__name__}, which parses "
                               "dependency files (CoNLL-U, CoNLL-X, Malt-TAB) or word/TAG text")
    source = kit.stdin_source(whole=True) if kit.is_stdio(args.input) else args.input
    fmt = args.format
    if fmt is None:
        try:
            fmt = detect_format(source, args.encoding)
        except FormatError:
            fmt = "text"                       # no treebank format: sentences, one a line
        if fmt == "brown" or (fmt != "text" and args.tokenize):
            fmt = "text"
    if fmt not in _DEP_WRITERS and fmt != "text":
        raise kit.CommandError(f"this model parses dependency files (CoNLL-U, CoNLL-X or "
                               f"Malt-TAB) or text (one sentence a line, word/TAG tokens); "
                               f"{_input_name(args)} is {fmt!r}"
                               + (" (bracketed trees)" if fmt == "ptb" else ""))
    out_fmt = args.output_format or ("conllu" if fmt == "text" else fmt)
    needs = _dependency_input_needs(model)
    if out_fmt == "malttab" and needs == "trees":
        raise kit.CommandError(f"Malt-TAB output has no comment lines for the scores of a "
                               f"latent-dep model ({_input_name(args)} is Malt-TAB): pass "
                               "--output-format conllx (or conllu)")
    if fmt == "text" and needs == "trees":
        raise kit.CommandError(f"{_input_name(args)} is text, but a {type(model).__name__} "
                               "scores given trees: it needs a dependency file with heads "
                               "(CoNLL-U, CoNLL-X or Malt-TAB)")
    write = _dep_writer(fmt, out_fmt)
    glued = _Untokenized(_input_name(args))

    def chunks(skip):
        from ..io.pipeline import chunked, skip_records

        if fmt == "text":
            sents = _text_dep_sentences(args, source, glued, needs)
        else:
            sents = read_treebank(source, format=fmt, encoding=args.encoding,
                                  heads_optional=True)
        return chunked(skip_records(sents, skip, args.output, _input_name(args)),
                       args.chunk_size)

    def parse_chunk(sents, progress):
        with kit.errors_in(_input_name(args)):
            return model.parse(sents, jobs=args.jobs, progress=progress)

    def write_chunk(sents, parsed):
        buf = io.StringIO()
        write(parsed, buf)
        return buf.getvalue()

    status = _run_chunks(args, chunks, parse_chunk, write_chunk, None, "blocks")
    glued.report()
    return status


def _dependency_input_needs(model) -> str:
    """What a dependency model reads: ``"words"`` (a tagger: FORM only), ``"trees"`` (it scores
    given heads) or ``"tags"`` (a parser of tagged words)."""
    names = {c.__name__ for c in type(model).__mro__}
    if "LexicalDisambiguator" in names:
        return "words"
    if "LatentDependencyModel" in names:
        return "trees"
    return "tags"


def _text_dep_sentences(args, source, glued, needs):
    """Text input of a dependency model: a ``DepSentence`` (heads unknown) per non-empty line;
    ``word/TAG`` tokens give XPOS.  A parser of tagged words refuses an untagged line."""
    from ..errors import FormatError
    from ..trees.conll import DepSentence

    for raw in _text_sentences(args, source, glued, skip_empty=True):
        n = len(raw.words)
        if raw.tags is None and needs == "tags":
            raise FormatError("this line is not tagged: this model parses word/TAG tokens "
                              "(one sentence a line) or a CoNLL-U / CoNLL-X / Malt-TAB file",
                              _input_name(args), raw.line)
        yield DepSentence(words=raw.words, xpos=raw.tags or ["_"] * n, heads=[-1] * n,
                          line=raw.line)


def _dep_writer(in_fmt: str, out_fmt: str):
    """``write(sentences, fh)`` of ``out_fmt``; CoNLL-X columns 9-10 (PHEAD, PDEPREL) and
    CoNLL-U DEPS / MISC do not mean the same: a conversion writes ``_`` for them."""
    from ..trees import conll

    if out_fmt == "conllx":
        return lambda sents, fh: conll.write_conllx(sents, fh,
                                                    columns_9_10=in_fmt == "conllx")
    if out_fmt == "conllu" and in_fmt == "conllx":
        return lambda sents, fh: conll.write_conllu(map(_without_columns_9_10, sents), fh)
    return getattr(conll, _DEP_WRITERS[out_fmt])


def _without_columns_9_10(sent):
    """A copy of a CoNLL-X sentence with ``_`` for PHEAD / PDEPREL (CoNLL-U DEPS / MISC)."""
    import copy

    out = copy.copy(sent)
    out.deps = ["_"] * len(sent)
    out.misc = ["_"] * len(sent)
    return out
