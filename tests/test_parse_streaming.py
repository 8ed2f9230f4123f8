"""Streaming, resumable corpus parsing on one machine: kill -9 then --resume gives the
bytes of an uninterrupted run, progress totals for .gz input, several inputs -> one output each
in a folder (in-process, no Dask needed)."""
from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import time

import pytest

from fastspectral import cli

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(argv, capsys):
    rc = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def work(tmp_path_factory, synthetic_grammar):
    """A PCFG model, 6,000 sentences (plain and .gz) and their single-process parse."""
    d = tmp_path_factory.mktemp("streaming")
    g = synthetic_grammar
    (d / "train.trees").write_text("".join(str(t) + "\n" for t in g.sample(300, seed=1)))
    assert cli.main(["train", "pcfg", str(d / "train.trees"), "-o", str(d / "m.fsm"), "-q"]) == 0
    text = "".join(" ".join(t.leaves()) + "\n" for t in g.sample(6000, seed=2))
    (d / "sents.txt").write_text(text)
    with gzip.open(d / "sents.txt.gz", "wt") as fh:
        fh.write(text)
    assert cli.main(["parse", str(d / "m.fsm"), str(d / "sents.txt"), "-o",
                     str(d / "ref.trees"), "-q", "--jobs", "1"]) == 0
    return d


@pytest.mark.slow
@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_kill_9_then_resume_gives_the_uninterrupted_bytes(work, tmp_path, gz):
    out = tmp_path / ("out.trees.gz" if gz else "out.trees")
    part = tmp_path / (out.name + ".part")
    cmd = [sys.executable, "-m", "fastspectral", "parse", str(work / "m.fsm"),
           str(work / "sents.txt"), "-o", str(out), "--chunk-size", "100", "--jobs", "1", "-q"]
    proc = subprocess.Popen(cmd, cwd=REPO, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    # a few chunks written (a gzip .part holds its 10-byte header before the first chunk)
    while time.time() < deadline and proc.poll() is None and \
            (not part.exists() or part.stat().st_size < 3000):
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    if proc.returncode == 0:
        pytest.skip("the parse finished before the signal arrived")
    assert proc.returncode == -signal.SIGKILL
    assert not out.exists() and part.exists()
    ref = (work / "ref.trees").read_bytes()
    assert cli.main(cmd[3:] + ["--resume"]) == 0
    assert not part.exists()
    got = gzip.decompress(out.read_bytes()) if gz else out.read_bytes()
    assert got == ref          # gzip: the same text (the compressed bytes hold a timestamp)


@pytest.mark.slow
def test_resume_after_a_half_written_line(work, tmp_path, capsys):
    ref = (work / "ref.trees").read_bytes()
    out = tmp_path / "o.trees"
    cut = ref.index(b"\n", len(ref) // 3) + 25          # 25 bytes into a line
    (tmp_path / "o.trees.part").write_bytes(ref[:cut])
    rc, _, err = run(["parse", work / "m.fsm", work / "sents.txt", "-o", out, "--resume",
                      "--jobs", "1"], capsys)
    assert rc == 0, err
    done = ref[:cut].count(b"\n")
    assert f"resumed after {done}" in err
    assert out.read_bytes() == ref


@pytest.mark.slow
def test_progress_total_and_eta_for_gz_input(work, tmp_path, capsys):
    rc, _, err = run(["parse", work / "m.fsm", work / "sents.txt.gz", "-o", tmp_path / "o.gz",
                      "--progress", "--jobs", "1"], capsys)
    assert rc == 0, err
    assert "/6000 " in err and "6000/6000 100.0%" in err and "sent/s" in err and "ETA" in err
    with gzip.open(tmp_path / "o.gz", "rb") as fh:
        assert fh.read() == (work / "ref.trees").read_bytes()
    # resumed: the bar counts what is left, so its rate and ETA are this run's
    ref = (work / "ref.trees").read_bytes()
    cut = ref.index(b"\n", len(ref) // 2) + 1
    (tmp_path / "r.trees.part").write_bytes(ref[:cut])
    rc, _, err = run(["parse", work / "m.fsm", work / "sents.txt.gz", "-o",
                      tmp_path / "r.trees", "--progress", "--resume", "--jobs", "1"], capsys)
    left = 6000 - ref[:cut].count(b"\n")
    assert rc == 0 and f"{left}/{left} 100.0%" in err, err
    assert (tmp_path / "r.trees").read_bytes() == ref


def test_count_lines(tmp_path):
    from fastspectral.io.pipeline import count_lines

    for name, data, n in [("a", b"", 0), ("b", b"x\n", 1), ("c", b"x\ny", 2),
                          ("d", b"\n\n\n", 3), ("e", b"x\r\ny\r\n", 2)]:
        (tmp_path / name).write_bytes(data)
        assert count_lines(tmp_path / name) == n
        (tmp_path / (name + ".gz")).write_bytes(gzip.compress(data))
        assert count_lines(tmp_path / (name + ".gz")) == n


def test_several_inputs_one_output_each_in_a_folder(work, tmp_path, capsys):
    ref = (work / "ref.trees").read_text().splitlines(keepends=True)
    src = tmp_path / "src"
    src.mkdir()
    lines = (work / "sents.txt").read_text().splitlines(keepends=True)
    (src / "a.txt").write_text("".join(lines[:700]))
    with gzip.open(src / "b.txt.gz", "wt") as fh:
        fh.write("".join(lines[700:1000]))
    (src / "empty.txt").write_text("")
    outdir = tmp_path / "parsed"
    rc, _, err = run(["parse", work / "m.fsm", src / "a.txt", src / "b.txt.gz", src / "empty.txt",
                      "-o", outdir, "--chunk-size", "300"], capsys)
    assert rc == 0 and "parsed 1000 sentences into 3 output(s)" in err, err
    assert sorted(os.listdir(outdir)) == ["a.txt", "b.txt.gz", "empty.txt"]
    assert (outdir / "a.txt").read_text() == "".join(ref[:700])
    with gzip.open(outdir / "b.txt.gz", "rt") as fh:
        assert fh.read() == "".join(ref[700:1000])
    assert (outdir / "empty.txt").read_text() == ""
    # --resume: a finished output is kept, an unfinished one continued
    (outdir / "a.txt").write_text("finished earlier\n")
    os.remove(outdir / "b.txt.gz")
    with gzip.open(outdir / "b.txt.gz.part", "wt") as fh:
        fh.write("".join(ref[700:800]))
    rc, _, err = run(["parse", work / "m.fsm", src / "a.txt", src / "b.txt.gz", "-o", outdir,
                      "--resume"], capsys)
    assert rc == 0 and "a.txt is complete: kept" in err and "resumed after 100" in err, err
    assert (outdir / "a.txt").read_text() == "finished earlier\n"
    with gzip.open(outdir / "b.txt.gz", "rt") as fh:
        assert fh.read() == "".join(ref[700:1000])
    # one input, -o an existing folder: the output is named like the input
    rc, _, err = run(["parse", work / "m.fsm", src / "empty.txt", "-o", outdir, "-q"], capsys)
    assert rc == 0 and (outdir / "empty.txt").read_text() == ""


def test_folder_mode_refusals(work, tmp_path, capsys):
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    for p in ("x/s.txt", "y/s.txt"):
        (tmp_path / p).write_text("a b\n")
    cases = [
        ([tmp_path / "x/s.txt", tmp_path / "y/s.txt", "-o", tmp_path / "out"],
         "need distinct file names"),
        ([tmp_path / "x/s.txt", tmp_path / "y/s.txt"], "several inputs need -o OUTDIR"),
        ([tmp_path / "x/s.txt", "-", "-o", tmp_path / "out"], "standard input ('-')"),
        ([tmp_path / "x/s.txt", tmp_path / "nope.txt", "-o", tmp_path / "out"],
         "input file not found"),
        ([tmp_path / "x/s.txt", "-o", tmp_path / "x"], "is also an input file"),
    ]
    for argv, message in cases:
        rc, out, err = run(["parse", work / "m.fsm", *argv, "-q"], capsys)
        assert rc == 2 and message in err and err.count("\n") == 1, (argv, err)
    assert (tmp_path / "x/s.txt").read_text() == "a b\n"


def test_a_sentence_failing_in_the_model_is_named_and_what_came_before_kept(work, tmp_path):
    """The failure of one sentence inside the model (on a worker, or here in-process) names
    the file and line; the chunks before it are in OUTPUT.part, and --resume continues."""
    from fastspectral.io import load
    from fastspectral.io import pipeline as dparse

    class Fragile:                      # the real model, failing on one word
        input_kind = "sentences"

        def __init__(self, model):
            self.model = model

        def parse(self, items, **kw):
            if any("BOOM" in words for words in items):
                raise ValueError("the chart exploded")
            return self.model.parse(items, **kw)

    lines = (work / "sents.txt").read_text().splitlines(keepends=True)[:300]
    lines[136] = "a BOOM b\n"
    src = tmp_path / "in.txt"
    src.write_text("".join(lines))
    model = tmp_path / "m.fsm"
    model.write_bytes((work / "m.fsm").read_bytes())
    key = dparse.model_ref(model).key
    dparse._MODELS[key] = Fragile(load(model))
    try:
        with pytest.raises(dparse.PartitionError) as info:
            dparse.parse_files([src], model, tmp_path / "out", chunk_size=50, jobs=1)
    finally:
        del dparse._MODELS[key]
    assert str(info.value) == f"{src}:137: ValueError: the chart exploded"
    ref = (work / "ref.trees").read_text().splitlines(keepends=True)
    assert (tmp_path / "out" / "in.txt.part").read_text() == "".join(ref[:100])
    assert not (tmp_path / "out" / "in.txt").exists()


def test_model_digest_reads_no_array_data(work, tmp_path):
    """The model's identity in OUTPUT.part.origin is the SHA-256 of its archive members'
    names, sizes and CRC-32s: a copy has the same, one changed byte of an array another
    (and that file no longer loads); a file that is not a zip archive: the SHA-256 of its
    bytes."""
    import hashlib
    import shutil
    import zipfile

    from fastspectral.io.pipeline import file_sha256, model_digest

    src = work / "m.fsm"
    copy = tmp_path / "copy.fsm"
    shutil.copy(src, copy)
    assert model_digest(copy) == model_digest(src)
    with zipfile.ZipFile(src) as zf:
        big = max(zf.infolist(), key=lambda i: i.file_size)
        start = big.header_offset + 30 + len(big.filename.encode()) + len(big.extra)
    data = bytearray(src.read_bytes())
    data[start + big.file_size - 1] ^= 0xFF          # the last byte of the largest member
    bad = tmp_path / "bad.fsm"
    bad.write_bytes(bytes(data))
    with zipfile.ZipFile(bad) as zf:                 # the directory still records the old CRC
        assert zf.getinfo(big.filename).CRC == big.CRC
    from fastspectral.errors import ModelFileError
    from fastspectral.io import load

    with pytest.raises(ModelFileError, match="CRC-32"):
        load(bad)
    plain = tmp_path / "plain.bin"
    plain.write_bytes(b"not a zip archive")
    assert model_digest(plain) == file_sha256(plain) == \
        hashlib.sha256(b"not a zip archive").hexdigest()


def test_resume_accepts_the_record_of_an_older_version(work, tmp_path, capsys):
    """A .part.origin written before model_digest existed records the SHA-256 of the model
    file's bytes: --resume checks that one, continuing with the same model and refusing
    another."""
    import json

    from fastspectral.io.output import SafeOutput
    from fastspectral.io.pipeline import file_sha256, part_origin

    ref = (work / "ref.trees").read_text().splitlines(keepends=True)
    out = tmp_path / "o.trees"
    origin = part_origin(work / "sents.txt", work / "m.fsm")
    old = {k: v for k, v in origin.items() if k != "model_digest"}
    old["model_sha256"] = file_sha256(work / "m.fsm")
    w = SafeOutput(out, origin=old)
    w.write("".join(ref[:20]))
    w.close()
    record = tmp_path / "o.trees.part.origin"
    assert "model_digest" not in json.loads(record.read_text())
    other = dict(old, model_sha256="0" * 64)
    record.write_text(json.dumps(other))
    rc, _, err = run(["parse", work / "m.fsm", work / "sents.txt", "-o", out, "--resume",
                      "--jobs", "1"], capsys)
    assert rc == 2 and "another version of the model" in err, err
    record.write_text(json.dumps(old))
    rc, _, err = run(["parse", work / "m.fsm", work / "sents.txt", "-o", out, "--resume",
                      "--jobs", "1"], capsys)
    assert rc == 0, err
    assert out.read_text() == "".join(ref)


def test_resume_refuses_a_part_from_another_input_or_model(work, tmp_path, capsys):
    """OUTPUT.part records its input and model (OUTPUT.part.origin): --resume with another
    input, a changed input or another model is refused with one line naming both files, and
    the .part is left as it was; the same input and model (the model under another name too)
    continue it."""
    from fastspectral.io.output import SafeOutput
    from fastspectral.io.pipeline import part_origin

    ref = (work / "ref.trees").read_text().splitlines(keepends=True)
    out = tmp_path / "o.trees"
    part = tmp_path / "o.trees.part"
    record = tmp_path / "o.trees.part.origin"
    w = SafeOutput(out, origin=part_origin(work / "sents.txt", work / "m.fsm"))
    w.write("".join(ref[:20]))
    w.close()
    assert part.exists() and record.exists()
    kept = part.read_bytes()
    lines = (work / "sents.txt").read_text().splitlines(keepends=True)
    other = tmp_path / "other.txt"
    other.write_text("".join(lines[100:3100]))
    changed = tmp_path / "changed.txt"
    changed.write_text("".join(lines))
    m2 = tmp_path / "m2.fsm"
    head = "".join((work / "train.trees").read_text().splitlines(keepends=True)[:100])
    (tmp_path / "t2.trees").write_text(head)
    assert cli.main(["train", "pcfg", str(tmp_path / "t2.trees"), "-o", str(m2), "-q"]) == 0
    for model, inp, names in ((work / "m.fsm", other, ["other.txt", "sents.txt"]),
                              (m2, work / "sents.txt", ["m2.fsm", "m.fsm"])):
        rc, _, err = run(["parse", model, inp, "-o", out, "--resume", "--jobs", "1"], capsys)
        assert rc == 2 and err.count("\n") == 1, err
        assert str(part) in err and all(n in err for n in names), err
        assert part.read_bytes() == kept and not out.exists()
    # one output per input in a folder (the file pipeline): the same check
    outdir = tmp_path / "outdir"
    outdir.mkdir()
    w = SafeOutput(outdir / "sents.txt", origin=part_origin(work / "sents.txt", work / "m.fsm"))
    w.write("".join(ref[:20]))
    w.close()
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "sents.txt").write_text("".join(lines[100:3100]))
    rc, _, err = run(["parse", work / "m.fsm", tmp_path / "x" / "sents.txt", "-o", outdir,
                      "--resume", "--jobs", "1"], capsys)
    assert rc == 2 and err.count("\n") == 1, err
    assert str(outdir / "sents.txt.part") in err and str(tmp_path / "x" / "sents.txt") in err
    assert str(work / "sents.txt") in err
    # the same file rewritten with other content of another size
    os.replace(work / "sents.txt", tmp_path / "saved.txt")
    try:
        (work / "sents.txt").write_text("".join(lines[:3000]))
        rc, _, err = run(["parse", work / "m.fsm", work / "sents.txt", "-o", out, "--resume"],
                         capsys)
        assert rc == 2 and "another version of" in err and str(part) in err, err
    finally:
        os.replace(tmp_path / "saved.txt", work / "sents.txt")
    # the same input and model: continued, and the record goes with the .part
    (tmp_path / "copy.fsm").write_bytes((work / "m.fsm").read_bytes())
    rc, _, err = run(["parse", tmp_path / "copy.fsm", work / "sents.txt", "-o", out,
                      "--resume", "--jobs", "1"], capsys)
    assert rc == 0 and "resumed after 20" in err, err
    assert out.read_text() == "".join(ref)
    assert not part.exists() and not record.exists()


def test_resume_refuses_a_part_longer_than_its_input(work, tmp_path, capsys):
    """A .part without a record (written by another program) is checked for its length: more
    sentences than the input is refused (file input: before any work; standard input and
    dependency files: when the input runs out, before anything is written)."""
    ref = (work / "ref.trees").read_text().splitlines(keepends=True)
    short = tmp_path / "short.txt"
    short.write_text("".join((work / "sents.txt").read_text().splitlines(keepends=True)[:10]))
    out = tmp_path / "o.trees"
    part = tmp_path / "o.trees.part"
    part.write_text("".join(ref[:20]))
    rc, _, err = run(["parse", work / "m.fsm", short, "-o", out, "--resume"], capsys)
    assert rc == 2 and err.count("\n") == 1, err
    assert f"{part} holds 20 sentences, more than the 10 of {short}" in err, err
    assert part.read_text() == "".join(ref[:20]) and not out.exists()
    outdir = tmp_path / "outdir"
    outdir.mkdir()
    (outdir / "short.txt.part").write_text("".join(ref[:20]))
    rc, _, err = run(["parse", work / "m.fsm", short, "-o", outdir, "--resume"], capsys)
    assert rc == 2 and err.count("\n") == 1, err
    assert f"{outdir / 'short.txt.part'} holds 20 sentences, more than the 10 of {short}" in err
    from fastspectral.io.pipeline import ResumeError, skip_records

    with pytest.raises(ResumeError, match=r"o.part holds 5 sentences, more than the 3 of "
                                          r"<stdin>"):
        list(skip_records(iter("abc"), 5, "o", "<stdin>"))
    assert list(skip_records(iter("abcd"), 2, "o", "<stdin>")) == ["c", "d"]
    # a .part without a record that fits: continued, with a warning
    part.write_text("".join(ref[:5]))
    rc, _, err = run(["parse", work / "m.fsm", work / "sents.txt", "-o", out, "--resume",
                      "--jobs", "1"], capsys)
    assert rc == 0 and "resumed after 5" in err and "no record of its input" in err, err
    assert out.read_text() == "".join(ref)
