"""neardup.Index against `neardup dedup --pairs` on the same corpus; files; bad calls; threads."""

from __future__ import annotations

import copy
import os
import pickle
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Set, Tuple

import pytest

import neardup
from conftest import write_lines

PairKey = Tuple[int, int]


def cli_pairs(run_cli, path, tmp_path, *flags: str) -> Dict[PairKey, str]:
    """(line a, line b) -> score text of `neardup dedup --pairs`, a < b."""
    pairs_file = tmp_path / "pairs.tsv"
    # The online index decides every pair by its sketch, as dedup --boundary-sigmas 0.
    run_cli("dedup", str(path), "--pairs", str(pairs_file), "--boundary-sigmas", "0", "--quiet", *flags)
    pairs = {}
    for line in pairs_file.read_text().splitlines():
        a, b, score = line.split("\t")
        pairs[(min(int(a), int(b)), max(int(a), int(b)))] = score
    return pairs


def score_text(method: str, score) -> str:
    return str(score) if method == "simhash" else f"{score:.4f}"


@pytest.fixture(scope="module")
def corpus(real_english_lines: List[str]) -> List[str]:
    return real_english_lines[:3000]


@pytest.mark.parametrize("method,flags", [("accurate", []), ("simhash", ["--method", "simhash"]),
                                          ("accurate", ["--threshold", "0.6"])])
def test_queries_find_the_pairs_of_dedup(corpus, tmp_path, run_cli, method, flags):
    path = write_lines(tmp_path / "en.txt", corpus)
    expected = cli_pairs(run_cli, path, tmp_path, *flags)
    threshold = float(flags[1]) if "--threshold" in flags else 0.8
    assert expected, "the corpus has near-duplicates"
    # One at a time: each document queried before it is inserted.
    index = neardup.Index(method, threshold=threshold)
    found: Dict[PairKey, str] = {}
    for i, text in enumerate(corpus, start=1):
        for match in index.query(text):
            assert isinstance(match, neardup.Match)
            found[(int(match.id), i)] = score_text(method, match.score)
        index.insert(str(i), text)
    assert found == expected
    # The same through query_and_insert, and through one load and parallel queries.
    again = neardup.Index(method, threshold=threshold)
    pairs_again: Set[PairKey] = set()
    for i, text in enumerate(corpus, start=1):
        result = again.query_and_insert(str(i), text, if_new=False)
        assert result.inserted
        pairs_again.update((int(m.id), i) for m in result.matches)
    assert pairs_again == set(expected)
    bulk = neardup.Index(method, threshold=threshold, expected_documents=len(corpus))
    bulk.insert_many([str(i) for i in range(1, len(corpus) + 1)], corpus)
    assert len(bulk) == len(corpus)
    everything: Set[PairKey] = set()
    for i, matches in enumerate(bulk.query_many(corpus, threads=3), start=1):
        everything.update((min(i, int(m.id)), max(i, int(m.id))) for m in matches
                          if int(m.id) != i)
    assert everything == set(expected)


def test_chinese_queries_find_the_pairs_of_dedup(real_chinese_lines, tmp_path, run_cli):
    texts = real_chinese_lines[:1500]
    path = write_lines(tmp_path / "zh.txt", texts)
    expected = cli_pairs(run_cli, path, tmp_path)
    index = neardup.Index()
    found = {}
    for i, text in enumerate(texts, start=1):
        result = index.query_and_insert(str(i), text, if_new=False)
        found.update({(int(m.id), i): f"{m.score:.4f}" for m in result.matches})
    assert found == expected


def test_documents_ids_and_stats():
    index = neardup.Index()
    text = "The index holds signatures of documents, never the texts themselves, by their ids"
    index.insert("a", text)
    index.insert("b", text + " and more")
    index.insert("empty", "")
    assert len(index) == 3 and "a" in index and "zzz" not in index and 7 not in index
    assert index.ids() == ["a", "b", "empty"]
    assert index.get("a") == neardup.Fingerprinter().sketch(text)
    assert index.get("empty").empty
    assert [m.id for m in index.query(text)] == ["a", "b"]
    assert index.query(text)[0] == neardup.Match("a", 1.0)
    index.remove("b")
    assert len(index) == 2 and "b" not in index
    assert [m.id for m in index.query(text)] == ["a"]
    stats = index.stats()
    assert stats["documents"] == 2 and stats["empty_documents"] == 1
    assert stats["inserts"] == 3 and stats["removes"] == 1
    assert stats["settings"] == index.settings == neardup.Fingerprinter().settings
    assert stats["queries"]["queries"] == 3 and stats["memory_bytes"] > 0
    result = index.query_and_insert("c", text + "!")
    assert result == neardup.QueryAndInsertResult([neardup.Match("a", 1.0)], False)
    assert "c" not in index
    result = index.query_and_insert("d", "Something else entirely, about spreadsheets")
    assert result.matches == [] and result.inserted and "d" in index
    # Ids are any str: non-ASCII, and lone surrogates (round-tripped as surrogateescape).
    index.insert("文档 ☃", "unicode ids are stored as their UTF-8 bytes, and come back")
    index.insert("bad \udcff id", "an id from a file that was not UTF-8 comes back the same")
    assert "文档 ☃" in index and "bad \udcff id" in index
    assert index.query("unicode ids are stored as their UTF-8 bytes, and come back")[0].id == \
        "文档 ☃"
    simhash = neardup.Index("simhash", k=3)
    simhash.insert("x", text)
    assert simhash.query(text) == [neardup.Match("x", 0)]
    assert isinstance(simhash.query(text)[0].score, int)


def test_sketches_on_disk(corpus, tmp_path):
    in_memory = neardup.Index()
    on_disk = neardup.Index(sketch_directory=tmp_path)
    ids = [str(i) for i in range(800)]
    in_memory.insert_many(ids, corpus[:800])
    on_disk.insert_many(ids, corpus[:800])
    assert on_disk.query_many(corpus[:1000]) == in_memory.query_many(corpus[:1000])
    assert on_disk.stats()["memory_bytes"] < in_memory.stats()["memory_bytes"]
    assert os.listdir(tmp_path) == []  # an unlinked file
    on_disk.close()


def test_save_and_load(corpus, tmp_path):
    for method in ("accurate", "simhash"):
        index = neardup.Index(method)
        index.insert_many([f"doc{i}" for i in range(1000)], corpus[:1000])
        index.remove("doc7")
        path = tmp_path / f"{method}.idx"
        index.save(path)
        assert [p.name for p in tmp_path.iterdir() if ".tmp" in p.name] == []
        queries = corpus[:1200]
        expected = index.query_many(queries)
        loaded = neardup.Index.load(path)  # the settings the file records
        assert loaded.settings == index.settings and loaded.method == method
        assert len(loaded) == 999 and "doc7" not in loaded
        assert loaded.query_many(queries) == expected
        assert loaded.ids() == index.ids()
        # Settings given must be the file's.
        same = neardup.Index.load(str(path), method=method, expected_documents=2000)
        assert same.query_many(queries[:100]) == expected[:100]
        if method == "accurate":
            with pytest.raises(neardup.FailedPreconditionError, match="threshold 0.7 here, 0.8"):
                neardup.Index.load(path, threshold=0.7)
        else:
            with pytest.raises(neardup.FailedPreconditionError, match="k 2 here, 3 in the file"):
                neardup.Index.load(path, method="simhash", k=2)
        # A loaded index takes further inserts and removes.
        loaded.insert("new", "a brand new document for the loaded index to hold")
        loaded.remove("doc8")
        assert len(loaded) == 999


def test_an_index_says_how_to_move_it_instead_of_pickling(corpus, tmp_path):
    # A copy of an index would not share the documents inserted later: pickling and copying are
    # refused with what to do instead (the error used to name the extension's class only).
    index = neardup.Index(threshold=0.7)
    index.insert_many([f"doc{i}" for i in range(100)], corpus[:100])
    for move in (pickle.dumps, copy.copy, copy.deepcopy):
        with pytest.raises(TypeError, match=r"cannot be pickled.*save\(\).*Index.load\(\)"):
            move(index)
    # What it says works: the file, and the method's options, which pickle.
    index.save(tmp_path / "a.idx")
    other = neardup.Index.load(tmp_path / "a.idx")
    assert other.query_many(corpus[:120]) == index.query_many(corpus[:120])
    fingerprinter = pickle.loads(pickle.dumps(index.fingerprinter()))
    options = pickle.loads(pickle.dumps(index.options))
    assert neardup.Index.from_options(options).settings == index.settings
    assert fingerprinter.sketch(corpus[0]) == index.get("doc0")
    with pytest.raises(ValueError, match="expected_documents is out of range"):
        neardup.Index(expected_documents=2**64)


def test_load_errors(tmp_path, corpus, run_cli):
    with pytest.raises(neardup.NotFoundError, match="missing.idx"):
        neardup.Index.load(tmp_path / "missing.idx")
    with pytest.raises(FileNotFoundError):
        neardup.Index.load(tmp_path / "missing.idx", method="simhash")
    index = neardup.Index()
    index.insert_many([str(i) for i in range(300)], corpus[:300])
    path = tmp_path / "good.idx"
    index.save(path)
    data = path.read_bytes()
    # Truncated, then damaged in the middle: refused, never trusted.
    (tmp_path / "short.idx").write_bytes(data[: len(data) // 2])
    with pytest.raises(neardup.CorruptionError, match="short.idx"):
        neardup.Index.load(tmp_path / "short.idx")
    damaged = bytearray(data)
    damaged[len(damaged) // 2] ^= 0x55
    (tmp_path / "damaged.idx").write_bytes(bytes(damaged))
    with pytest.raises(neardup.CorruptionError):
        neardup.Index.load(tmp_path / "damaged.idx")
    (tmp_path / "garbage.idx").write_bytes(b"not an index at all" * 10)
    with pytest.raises(neardup.Error):
        neardup.Index.load(tmp_path / "garbage.idx")
    # An index file of another kind (dedup --save-index: signatures) is named as such.
    text_path = write_lines(tmp_path / "en.txt", corpus[:100])
    run_cli("dedup", str(text_path), "--save-index", str(tmp_path / "batch.idx"), "--quiet")
    with pytest.raises(neardup.InvalidArgumentError):
        neardup.Index.load(tmp_path / "batch.idx")
    with pytest.raises(TypeError, match="unexpected keyword argument 'bands'"):
        neardup.Index.load(path, bands=16)


def test_failed_save_leaves_no_file(tmp_path, corpus):
    index = neardup.Index()
    index.insert_many([str(i) for i in range(100)], corpus[:100])
    with pytest.raises(neardup.Error):
        index.save(tmp_path / "no such folder" / "index.idx")
    os.mkdir(tmp_path / "a folder")
    with pytest.raises(neardup.InvalidArgumentError):
        index.save(tmp_path / "a folder")
    target = tmp_path / "kept.idx"
    target.write_bytes(b"old content")
    index.save(target)
    assert neardup.Index.load(target).ids() == index.ids()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a folder", "kept.idx"]


# --------------------------------------------------------------------------------------------------
# Bad calls


def test_bad_calls_raise_clear_errors(corpus):
    index = neardup.Index(invalid_utf8="reject")
    index.insert("a", corpus[0])
    with pytest.raises(neardup.FailedPreconditionError, match="id 'a' is already stored"):
        index.insert("a", corpus[1])
    with pytest.raises(neardup.NotFoundError):
        index.remove("missing")
    with pytest.raises(neardup.NotFoundError):
        index.get("missing")
    with pytest.raises(TypeError, match="id must be str, not int"):
        index.insert(1, "text")
    with pytest.raises(TypeError, match="text must be str or bytes, not list"):
        index.query(["text"])
    with pytest.raises(neardup.InvalidArgumentError, match="id must not be empty"):
        index.insert("", "text")
    with pytest.raises(neardup.InvalidArgumentError, match=r"ids\[1\]: a document id must not"):
        index.insert_many(["x", ""], corpus[1:3])
    with pytest.raises(neardup.InvalidArgumentError, match="invalid UTF-8 at byte offset 4"):
        index.insert("b", b"text\xff")
    assert "b" not in index
    # insert_many checks everything before storing anything.
    with pytest.raises(neardup.FailedPreconditionError, match=r"ids\[2\]: id 'x' repeats ids\[0\]"):
        index.insert_many(["x", "y", "x"], corpus[1:4])
    with pytest.raises(neardup.FailedPreconditionError, match=r"ids\[1\]: id 'a' is already"):
        index.insert_many(["x", "a"], corpus[1:3])
    with pytest.raises(neardup.InvalidArgumentError, match=r"texts\[1\]: invalid UTF-8"):
        index.insert_many(["x", "y", "z"], [corpus[1], b"\xc3", corpus[3]])
    with pytest.raises(TypeError, match=r"ids\[1\] must be str, not int"):
        index.insert_many(["x", 2], corpus[1:3])
    with pytest.raises(ValueError, match="ids and texts differ in length"):
        index.insert_many(["x", "y"], corpus[1:4])
    with pytest.raises(TypeError, match="ids must be an iterable of str, not a single str"):
        index.insert_many("xy", corpus[1:3])
    assert index.ids() == ["a"]
    with pytest.raises(neardup.InvalidArgumentError, match="unknown method 'exact'"):
        neardup.Index("exact")
    with pytest.raises(ValueError, match="expected_documents"):
        neardup.Index(expected_documents=-1)


def test_closed_index_refuses_every_call(tmp_path):
    with neardup.Index() as index:
        index.insert("a", "some text of a document in a closed index")
    assert index.closed
    calls = [
        lambda: index.insert("b", "text"),
        lambda: index.insert_many(["b"], ["text"]),
        lambda: index.query("text"),
        lambda: index.query_many(["text"]),
        lambda: index.query_and_insert("b", "text"),
        lambda: index.remove("a"),
        lambda: index.get("a"),
        lambda: index.ids(),
        lambda: index.stats(),
        lambda: index.save(tmp_path / "closed.idx"),
        lambda: len(index),
        lambda: "a" in index,
        lambda: index.settings,
        lambda: index.__enter__(),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="index is closed"):
            call()
    index.close()  # again: nothing
    assert repr(index) == "<neardup.Index closed>"
    assert not (tmp_path / "closed.idx").exists()


# --------------------------------------------------------------------------------------------------
# Threads


def test_concurrent_queries_and_inserts(corpus):
    base, extra = corpus[:1500], corpus[1500:2400]
    queries = corpus[:2400:3]
    serial = neardup.Index()
    serial.insert_many([f"b{i}" for i in range(len(base))], base)
    expected = [serial.query(q) for q in queries]

    index = neardup.Index()
    index.insert_many([f"b{i}" for i in range(len(base))], base)
    failures: List[str] = []

    def insert(part: int) -> None:
        for i in range(part, len(extra), 3):
            index.insert(f"new{i}", extra[i])

    def query(part: int) -> None:
        for j in range(part, len(queries), 2):
            # Documents inserted meanwhile may match too; the base's matches are the serial ones.
            got = [m for m in index.query(queries[j]) if not m.id.startswith("new")]
            if got != expected[j]:
                failures.append(f"query {j}: {got} != {expected[j]}")
        many = index.query_many(queries[part::2], threads=2)
        for j, found in zip(range(part, len(queries), 2), many):
            got = [m for m in found if not m.id.startswith("new")]
            if got != expected[j]:
                failures.append(f"query_many {j}")

    with ThreadPoolExecutor(max_workers=5) as pool:
        jobs = [pool.submit(insert, p) for p in range(3)]
        jobs += [pool.submit(query, p) for p in range(2)]
        for job in jobs:
            job.result()
    assert failures == []
    # Everything inserted: the same answers as the index built serially.
    serial.insert_many([f"new{i}" for i in range(len(extra))], extra)
    assert len(index) == len(serial)
    assert index.query_many(queries) == serial.query_many(queries)


def test_concurrent_query_and_insert_keeps_one_of_each(corpus):
    # Kept documents of a dedup are pairwise not near-duplicates: one of each group is stored.
    kept = neardup.dedup(corpus[:800]).kept_positions
    # (Documents without features are never matched: each copy of one would be stored.)
    distinct = [corpus[i] for i in kept if not neardup.Fingerprinter().sketch(corpus[i]).empty]
    distinct = distinct[:200]
    index = neardup.Index()
    barrier = threading.Barrier(4)

    def stream(worker: int) -> int:
        barrier.wait()
        stored = 0
        for i, text in enumerate(distinct):
            stored += index.query_and_insert(f"{worker}-{i}", text, if_new=True).inserted
        return stored

    with ThreadPoolExecutor(max_workers=4) as pool:
        total = sum(pool.map(stream, range(4)))
    assert total == len(distinct) == len(index)
    for i in range(len(distinct)):
        assert sum(f"{w}-{i}" in index for w in range(4)) == 1
