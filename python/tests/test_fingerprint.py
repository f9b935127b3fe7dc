"""neardup.Fingerprinter against `neardup hash` on the same texts; bad input; concurrent batches."""

from __future__ import annotations

import copy
import json
import pickle
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Tuple

import numpy as np
import pytest

import neardup
from conftest import write_lines


def hash_tsv(output: str) -> Dict[str, str]:
    """id -> the rest of the line, of `neardup hash` output."""
    rows = {}
    for line in output.splitlines():
        key, _, rest = line.partition("\t")
        rows[key] = rest
    return rows


def sketch_rows(output: str) -> List[Tuple[str, str, bool]]:
    """(sketch hex, band keys hex, empty) of every line of `neardup hash --sketch --json`."""
    rows = []
    for line in output.splitlines():
        record = json.loads(line)
        rows.append((record["sketch"], record["bands"], record.get("empty", False)))
    return rows


@pytest.fixture(scope="module")
def english(real_english_lines: List[str]) -> List[str]:
    # A blank and a symbols-only line: documents without features.
    return real_english_lines[:1500] + ["", "□□□□□，□□□□□。"]


# --------------------------------------------------------------------------------------------------
# The same results as the command


def test_simhash_method_matches_neardup_hash(english, tmp_path, run_cli):
    path = write_lines(tmp_path / "en.txt", english)
    expected = hash_tsv(run_cli("hash", str(path)))
    fingerprinter = neardup.Fingerprinter("simhash")
    batch = fingerprinter.simhash_batch(english)
    assert batch.dtype == np.uint64 and batch.shape == (len(english),)
    assert [f"{int(v):016x}" for v in batch] == [expected[str(i + 1)] for i in range(len(english))]
    # One at a time, the same.
    for i in range(0, len(english), 97):
        assert fingerprinter.simhash(english[i]) == int(batch[i])
        assert fingerprinter.sketch(english[i]).simhash_hex() == expected[str(i + 1)]


@pytest.mark.parametrize(
    "keywords,flags",
    [
        ({"mode": "terms"}, ["--mode", "terms"]),
        ({"shingle_unit": "char", "shingle_size": 4}, ["--shingle-unit", "char", "-n", "4"]),
        ({"normalize": False, "weighting": "distinct"}, ["--no-normalize", "--weighting",
                                                         "distinct"]),
        ({"mode": "keywords", "keyword_count": 8}, ["--mode", "keywords", "--keywords", "8"]),
    ],
)
def test_feature_options_match_the_flags(english, tmp_path, run_cli, keywords, flags):
    texts = english[:400]
    path = write_lines(tmp_path / "en.txt", texts)
    expected = hash_tsv(run_cli("hash", *flags, str(path)))
    got = neardup.Fingerprinter("simhash", **keywords).simhash_batch(texts)
    assert [f"{int(v):016x}" for v in got] == [expected[str(i + 1)] for i in range(len(texts))]


def test_accurate_fingerprint_is_hash_of_its_features(english, tmp_path, run_cli):
    # The accurate method's features: distinct character 5-grams, Traditional folded.
    path = write_lines(tmp_path / "en.txt", english)
    expected = hash_tsv(run_cli("hash", "--shingle-unit", "char", "-n", "5", "--weighting",
                                "distinct", "--fold", "t2s", str(path)))
    got = neardup.Fingerprinter().simhash_batch(english)
    assert [f"{int(v):016x}" for v in got] == [expected[str(i + 1)] for i in range(len(english))]


@pytest.mark.parametrize("threshold", [0.8, 0.6])
def test_sketches_match_neardup_hash_sketch(english, tmp_path, run_cli, threshold):
    path = write_lines(tmp_path / "en.txt", english)
    expected = sketch_rows(run_cli("hash", "--sketch", "--json", "--threshold", str(threshold),
                                   str(path)))
    fingerprinter = neardup.Fingerprinter(threshold=threshold)
    batch = fingerprinter.sketch_batch(english)
    n = len(english)
    assert batch.simhash.shape == (n,) and batch.simhash.dtype == np.uint64
    assert batch.sketch.shape == (n, 132) and batch.sketch.dtype == np.uint8
    assert batch.band_keys.shape == (n, 20) and batch.band_keys.dtype == np.uint32
    assert batch.empty.shape == (n,) and batch.empty.dtype == np.bool_
    assert batch.documents == n
    got = [(batch.sketch[i].tobytes().hex(), "".join(f"{int(k):08x}" for k in batch.band_keys[i]),
            bool(batch.empty[i])) for i in range(n)]
    assert got == expected
    assert batch.empty[-1] and batch.empty[-2] and not batch.empty[0]
    for i in range(0, n, 101):
        one = fingerprinter.sketch(english[i])
        assert one == batch.row(i)
        assert (one.sketch_hex(), one.band_keys_hex(), one.empty) == expected[i]


def test_chinese_matches_the_command(real_chinese_lines, tmp_path, run_cli):
    texts = real_chinese_lines[:800]
    path = write_lines(tmp_path / "zh.txt", texts)
    classic = hash_tsv(run_cli("hash", str(path)))
    got = neardup.Fingerprinter("simhash").simhash_batch(texts)
    assert [f"{int(v):016x}" for v in got] == [classic[str(i + 1)] for i in range(len(texts))]
    sketches = sketch_rows(run_cli("hash", "--sketch", "--json", str(path)))
    batch = neardup.Fingerprinter().sketch_batch(texts)
    assert [batch.row(i).sketch_hex() for i in range(len(texts))] == [s for s, _, _ in sketches]
    # Traditional Chinese is folded to Simplified by the accurate method.
    fingerprinter = neardup.Fingerprinter()
    assert fingerprinter.sketch("這是一個測試，簡體與繁體") == fingerprinter.sketch("这是一个测试，简体与繁体")


def test_invalid_bytes_replaced_as_in_a_file(tmp_path, run_cli):
    texts = [b"caf\xe9 au lait with some more words", b"\xff\xfe broken start of a line here",
             "lone \udc80 surrogate in a str of words".encode("utf-8", "surrogatepass")]
    path = tmp_path / "bad.txt"
    path.write_bytes(b"\n".join(texts) + b"\n")
    expected = hash_tsv(run_cli("hash", str(path)))
    fingerprinter = neardup.Fingerprinter("simhash")
    assert [f"{int(v):016x}" for v in fingerprinter.simhash_batch(texts)] == \
        [expected[str(i + 1)] for i in range(len(texts))]
    # A str with a lone surrogate is the bytes it stands for.
    assert fingerprinter.simhash("lone \udc80 surrogate in a str of words") == \
        int(expected["3"], 16)


# --------------------------------------------------------------------------------------------------
# Batches: arguments, threads


def test_batches_take_any_iterable_and_any_thread_count(english):
    fingerprinter = neardup.Fingerprinter()
    texts = english[:600]
    reference = fingerprinter.sketch_batch(texts, threads=1)
    as_bytes = [t.encode() for t in texts]
    for result in (fingerprinter.sketch_batch(iter(texts)),
                   fingerprinter.sketch_batch(tuple(texts), threads=3),
                   fingerprinter.sketch_batch(as_bytes, threads=0),
                   fingerprinter.sketch_batch((t for t in texts), threads=16),
                   fingerprinter.sketch_batch([bytearray(b) for b in as_bytes], threads=2)):
        for a, b in zip(result, reference):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(fingerprinter.simhash_batch(texts, threads=2), reference.simhash)
    empty = fingerprinter.sketch_batch([])
    assert empty.simhash.shape == (0,) and empty.sketch.shape == (0, 132)
    assert empty.band_keys.shape == (0, 20)


def test_simhash_method_has_no_sketch(english):
    fingerprinter = neardup.Fingerprinter("simhash")
    assert fingerprinter.sketch_bytes == 0 and fingerprinter.bands == 0
    batch = fingerprinter.sketch_batch(english[:10])
    assert batch.sketch.shape == (10, 0) and batch.band_keys.shape == (10, 0)
    one = fingerprinter.sketch(english[0])
    assert one.sketch == b"" and one.band_keys == () and one.simhash == int(batch.simhash[0])
    with pytest.raises(neardup.NotSupportedError, match="no sketches"):
        fingerprinter.estimate_jaccard(b"", b"")


def test_empty_text():
    for method in ("accurate", "simhash"):
        signature = neardup.Fingerprinter(method).sketch("")
        assert signature.empty and signature.simhash == 0
        assert neardup.Fingerprinter(method).compare("", "") is None


# --------------------------------------------------------------------------------------------------
# Comparisons


def test_compare_and_estimates(english):
    fingerprinter = neardup.Fingerprinter()
    a = "The quick brown fox jumps over the lazy dog near the river bank today"
    b = "The quick brown fox jumps over the lazy dog near the river bank today!"
    c = "Completely different words about spreadsheets and their formulas"
    score = fingerprinter.compare(a, b)
    assert score == 1.0
    assert fingerprinter.compare(a, c) is None
    sa, sb = fingerprinter.sketch(a), fingerprinter.sketch(b)
    assert fingerprinter.compare(sa, sb) == score
    assert neardup.estimate_jaccard(sa, sb) == fingerprinter.estimate_jaccard(sa.sketch, sb.sketch)
    assert neardup.estimate_jaccard(sa.sketch, fingerprinter.sketch(c).sketch) < 0.3
    # Estimates on batch rows (uint8 arrays) are those of the bytes.
    batch = fingerprinter.sketch_batch(english[:50])
    for i in range(0, 49, 7):
        assert neardup.estimate_jaccard(batch.sketch[i], batch.sketch[i + 1]) == \
            neardup.estimate_jaccard(batch.row(i), batch.row(i + 1))
    classic = neardup.Fingerprinter("simhash", k=3)
    x, y = classic.simhash(a), classic.simhash(b)
    distance = neardup.hamming_distance(x, y)
    assert distance == bin(x ^ y).count("1")
    assert classic.compare(a, b) == (distance if distance <= 3 else None)
    assert isinstance(classic.compare(a, a), int) and classic.compare(a, a) == 0
    codes = classic.simhash_batch(english[:20])
    distances = neardup.hamming_distance(codes, codes[0])
    assert distances.shape == (20,)
    assert [int(d) for d in distances] == [bin(int(v) ^ int(codes[0])).count("1") for v in codes]


# --------------------------------------------------------------------------------------------------
# Bad input


def test_wrong_types_name_the_argument():
    fingerprinter = neardup.Fingerprinter()
    with pytest.raises(TypeError, match="text must be str or bytes, not int"):
        fingerprinter.simhash(5)
    with pytest.raises(TypeError, match=r"texts\[1\] must be str or bytes, not NoneType"):
        fingerprinter.sketch_batch(["fine", None])
    with pytest.raises(TypeError, match="texts must be an iterable of str or bytes, not int"):
        fingerprinter.simhash_batch(42)
    with pytest.raises(TypeError, match="not a single str"):
        fingerprinter.simhash_batch("one text, not a list of them")
    with pytest.raises(TypeError, match="threshold must be a number, not str"):
        neardup.Fingerprinter(threshold="0.8")
    with pytest.raises(TypeError, match="shingle_size must be int, not float"):
        neardup.Fingerprinter(shingle_size=3.0)
    with pytest.raises(TypeError, match="normalize must be bool"):
        neardup.Fingerprinter(normalize="no")
    with pytest.raises(TypeError, match="unexpected keyword argument 'shingles'"):
        neardup.Fingerprinter(shingles=3)
    with pytest.raises(TypeError, match="sketch_a must be bytes-like"):
        neardup.estimate_jaccard("text", b"")
    with pytest.raises(TypeError, match="threads must be int"):
        fingerprinter.simhash_batch([], threads="all")


def test_invalid_utf8_rejected_with_its_offset():
    strict = neardup.Fingerprinter(invalid_utf8="reject")
    with pytest.raises(neardup.InvalidArgumentError, match="invalid UTF-8 at byte offset 3"):
        strict.simhash(b"abc\xffdef")
    with pytest.raises(ValueError, match=r"^texts\[2\]: invalid UTF-8 at byte offset 5$"):
        strict.sketch_batch(["ok text", b"fine", b"hello\xc3(", b"later \xff too"], threads=2)
    with pytest.raises(neardup.InvalidArgumentError, match="byte offset 2"):
        strict.sketch("ab\ud800cd")  # a lone surrogate: invalid UTF-8 once encoded
    # The first bad document is the one named, whatever the threads.
    texts = ["good text %d" % i for i in range(5000)]
    texts[4321] = b"\xff"
    texts[4999] = b"\xfe"
    for threads in (1, 2, 8):
        with pytest.raises(neardup.InvalidArgumentError, match=r"^texts\[4321\]: "):
            strict.simhash_batch(texts, threads=threads)
    assert neardup.Fingerprinter().simhash(b"abc\xffdef") == \
        neardup.Fingerprinter().simhash("abc\ufffddef")


@pytest.mark.parametrize(
    "keywords,message",
    [
        ({"method": "fast"}, r"unknown method 'fast' \(expected accurate or simhash\)"),
        ({"mode": "ngrams"}, "unknown feature mode 'ngrams'"),
        ({"shingle_unit": "byte"}, "byte"),
        ({"language": "fr"}, "fr"),
        ({"invalid_utf8": "ignore"}, "unknown invalid_utf8 policy 'ignore'"),
        ({"weighting": "tfidf"}, "tfidf"),
        ({"shingle_size": 0}, "shingle"),
        ({"threshold": 1.5}, "threshold"),
        ({"method": "simhash", "k": 9}, "k"),
        ({"max_document_bytes": -1}, "max_document_bytes must be >= 0"),
        ({"mode": "keywords", "language": "en"}, "keywords"),
        # Ints too large for the library: a message naming the keyword, not pybind11's list of
        # signatures.
        ({"method": "simhash", "k": 10**30}, "^k is out of range: 10{30}$"),
        ({"shingle_size": 2**31}, "^shingle_size is out of range"),
        ({"keyword_count": -(10**20)}, "^keyword_count is out of range"),
        ({"max_document_bytes": 2**64}, "^max_document_bytes is out of range"),
    ],
)
def test_bad_options_are_named(keywords, message):
    with pytest.raises(neardup.InvalidArgumentError, match=message):
        neardup.Fingerprinter(**keywords)


def test_missing_files_and_limits(tmp_path):
    with pytest.raises(neardup.NotFoundError):
        neardup.Fingerprinter(folding_table=tmp_path / "missing.ocd2")
    with pytest.raises(neardup.NotFoundError):
        neardup.Fingerprinter("simhash", mode="terms", language="zh",
                              dictionary=tmp_path / "missing.txt")
    small = neardup.Fingerprinter(max_document_bytes=10)
    with pytest.raises(neardup.ResourceExhaustedError, match=r"^texts\[1\]: "):
        small.simhash_batch(["short", "a text longer than ten bytes"])
    with pytest.raises(ValueError, match="threads must be 0"):
        small.simhash_batch([], threads=-1)
    with pytest.raises(ValueError, match="threads must be 0 .* not 10{30}$"):
        small.sketch_batch(["text"], threads=10**30)


# --------------------------------------------------------------------------------------------------
# Pickling (Dask tasks take their arguments pickled; test_dask.py runs one)


def test_pickled_and_copied_fingerprinters_sign_alike(english, tmp_path):
    stop_words = tmp_path / "stop.txt"
    stop_words.write_text("click\nselect\nchoose\ndialog\nfile\ntext\nlibreoffice\n",
                          encoding="utf-8")
    fingerprinters = [
        neardup.Fingerprinter(),
        neardup.Fingerprinter(threshold=0.6, max_document_bytes=1 << 20, invalid_utf8="reject"),
        neardup.Fingerprinter("simhash", k=5, shingle_size=2, normalize=False),
        neardup.Fingerprinter.from_options(neardup.MethodOptions.from_settings(
            "method=accurate threshold=0.7 bands=16x5")),
        # A custom keyword model: loaded again from its files where it is unpickled.
        neardup.Fingerprinter("simhash", mode="keywords", stop_words=stop_words),
    ]
    texts = english[:300]
    for fingerprinter in fingerprinters:
        expected = fingerprinter.sketch_batch(texts)
        copies = [pickle.loads(pickle.dumps(fingerprinter, protocol))
                  for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1)]
        copies += [copy.copy(fingerprinter), copy.deepcopy(fingerprinter)]
        for other in copies:
            assert type(other) is neardup.Fingerprinter and other is not fingerprinter
            assert other.settings == fingerprinter.settings
            for name in ("invalid_utf8", "max_document_bytes", "bands", "rows", "threshold"):
                assert getattr(other.options, name) == getattr(fingerprinter.options, name)
            got = other.sketch_batch(texts)
            for field in expected._fields:
                assert np.array_equal(getattr(got, field), getattr(expected, field)), field
            assert other.sketch(texts[0]) == fingerprinter.sketch(texts[0])
    # The custom model matters (so its copy was loaded from the same files).
    assert not np.array_equal(fingerprinters[4].simhash_batch(texts),
                              neardup.Fingerprinter("simhash", mode="keywords").simhash_batch(texts))
    # MethodOptions and the extension's Signer pickle too.
    options = fingerprinters[1].options
    for other in (pickle.loads(pickle.dumps(options)), copy.deepcopy(options)):
        assert repr(other) == repr(options) and other.max_document_bytes == 1 << 20
    signer = pickle.loads(pickle.dumps(fingerprinters[2]._signer))
    assert signer.simhash(texts[0]) == fingerprinters[2].simhash(texts[0])


# --------------------------------------------------------------------------------------------------
# Threads


def test_concurrent_batches_give_the_serial_results(english):
    fingerprinter = neardup.Fingerprinter()
    classic = neardup.Fingerprinter("simhash")
    chunks = [english[i::4] for i in range(4)]
    serial = [fingerprinter.sketch_batch(chunk, threads=1) for chunk in chunks]
    serial_classic = [classic.simhash_batch(chunk, threads=1) for chunk in chunks]
    singles = [fingerprinter.simhash(t) for t in chunks[0][:200]]

    def work(i: int):
        j = i % 4
        if i % 3 == 0:
            return "sketch", j, fingerprinter.sketch_batch(chunks[j], threads=2)
        if i % 3 == 1:
            return "classic", j, classic.simhash_batch(iter(chunks[j]), threads=0)
        return "single", j, [fingerprinter.simhash(t) for t in chunks[0][:200]]

    with ThreadPoolExecutor(max_workers=6) as pool:
        for kind, j, result in pool.map(work, range(24)):
            if kind == "sketch":
                for a, b in zip(result, serial[j]):
                    np.testing.assert_array_equal(a, b)
            elif kind == "classic":
                np.testing.assert_array_equal(result, serial_classic[j])
            else:
                assert result == singles


def test_batches_release_the_gil(english):
    fingerprinter = neardup.Fingerprinter()
    texts = english * 4
    count = 0
    done = threading.Event()

    def spin() -> None:
        nonlocal count
        while not done.is_set():
            count += 1

    thread = threading.Thread(target=spin)
    thread.start()
    try:
        time.sleep(0.01)
        start, began = count, time.perf_counter()
        fingerprinter.sketch_batch(texts, threads=1)
        elapsed = time.perf_counter() - began
        spun = count - start
    finally:
        done.set()
        thread.join()
    # While the batch runs without the GIL, the Python thread keeps counting.
    assert elapsed > 0.005
    assert spun > 1000, (spun, elapsed)
