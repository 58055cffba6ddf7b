"""Errors as Python users expect them: missing files, bad traces with their byte offset, repairs
as warnings, and no crash of the interpreter on any input of the fuzz corpus."""

import gzip
import os
import warnings

import pytest

import tracemodel
from conftest import DATA, data
from tracemodel.hta import TraceAnalysis


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        tracemodel.read(tmp_path / "nope.json")
    assert e.value.filename == str(tmp_path / "nope.json")
    with pytest.raises(FileNotFoundError):
        TraceAnalysis(trace_files={0: str(tmp_path / "nope.json")})
    with pytest.raises(IsADirectoryError):
        tracemodel.read(tmp_path)


def test_bad_trace_names_file_and_offset(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": }]}')
    with pytest.raises(tracemodel.TraceError) as e:
        tracemodel.read(p)
    assert isinstance(e.value, ValueError)
    assert e.value.path == str(p)
    assert e.value.offset is not None and 0 <= e.value.offset <= p.stat().st_size
    assert str(p) in str(e.value) and "byte" in str(e.value)


def test_truncated_gzip(tmp_path):
    raw = gzip.compress(b'{"traceEvents": [' + b'{"ph":"X","name":"a","ts":1,"dur":2},' * 5000)
    p = tmp_path / "cut.json.gz"
    p.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(tracemodel.TraceError):
        tracemodel.read(p)


def test_repairs_are_warnings(tmp_path):
    p = tmp_path / "repair.json"
    p.write_text('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1,'
                 ' "ts": 10, "dur": -5}, {"ph": "f", "id": 9, "bp": "e", "cat": "ac2g",'
                 ' "name": "x", "pid": 1, "tid": 1, "ts": 3}]}')
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        t = tracemodel.read(p)
    reps = [x for x in w if issubclass(x.category, tracemodel.RepairWarning)]
    assert len(reps) == 1
    assert reps[0].message.repairs == t.repairs
    assert t.repairs.get("end_before_start") == 1
    assert "repaired" in str(reps[0].message)


def corpus():
    files = []
    for d in ["fuzz"]:
        root = os.path.join(DATA, d)
        if os.path.isdir(root):
            files += [os.path.join(root, f) for f in sorted(os.listdir(root))
                      if os.path.isfile(os.path.join(root, f))]
    return files


@pytest.mark.parametrize("path", corpus(), ids=os.path.basename)
def test_fuzz_corpus_never_crashes(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            t = tracemodel.read(path)
        except tracemodel.TraceError:
            return
        e = t.events()
        assert len(e) == len(t)
        t.key_averages()
        t.tree()
        try:
            TraceAnalysis(trace_files={0: path}).get_temporal_breakdown(visualize=False)
        except tracemodel.TraceError:
            pass


@pytest.mark.parametrize("size", [0, 1, 7, 100])
def test_garbage_bytes(tmp_path, size):
    p = tmp_path / "garbage.bin"
    p.write_bytes(bytes((k * 37 + 11) % 256 for k in range(size)))
    with pytest.raises(tracemodel.TraceError):
        tracemodel.read(p)


@pytest.mark.parametrize("suffix", [".json", ".pftrace"])
def test_mutated_traces_never_crash(tmp_path, suffix):
    """Bytes of a real trace flipped, cut and repeated: an error or a trace, never a crash."""
    import random
    src = tmp_path / ("src" + suffix)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tracemodel.read(data("pytorch-1.13-kineto", "mlp_train.kineto.json")).write(src)
    raw = src.read_bytes()
    rng = random.Random(7)
    outcomes = {"read": 0, "error": 0}
    for k in range(60):
        b = bytearray(raw)
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(b))
            b[i] = rng.randrange(256)
        if k % 3 == 1:
            b = b[: rng.randrange(len(b))]
        if k % 3 == 2:
            i = rng.randrange(len(b))
            b = b[:i] + b[i:i + 64] * 3 + b[i:]
        p = tmp_path / ("m%d%s" % (k, suffix))
        p.write_bytes(bytes(b))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                t = tracemodel.read(p)
                assert len(t.events()) == len(t)
                outcomes["read"] += 1
            except tracemodel.TraceError:
                outcomes["error"] += 1
    assert outcomes["read"] + outcomes["error"] == 60
