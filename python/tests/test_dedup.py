"""neardup.dedup against `neardup dedup -o/--dups/--clusters/--pairs/--report`; bad input;
concurrent runs."""

from __future__ import annotations

import inspect
import json
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List

import numpy as np
import pytest

import neardup
from conftest import write_lines

# Report fields that may differ from run to run, or that count what differs by design (the bytes of
# the file against the texts' own).
VOLATILE = {"stages", "seconds", "threads", "bytes", "run_dependent"}


def run_dedup_cli(run_cli, path, tmp_path, *flags: str) -> Dict[str, Any]:
    """Every output of `neardup dedup` on a file, read back."""
    out = {name: tmp_path / name for name in ("kept", "dups", "clusters", "pairs", "report")}
    run_cli("dedup", str(path), "-o", str(out["kept"]), "--dups", str(out["dups"]), "--clusters",
            str(out["clusters"]), "--pairs", str(out["pairs"]), "--report", str(out["report"]),
            "--quiet", *flags)
    return {
        "kept": out["kept"].read_bytes().decode().splitlines(),
        "dups": [line.split("\t") for line in out["dups"].read_text().splitlines()],
        "clusters": [json.loads(line) for line in out["clusters"].read_text().splitlines()],
        "pairs": [line.split("\t") for line in out["pairs"].read_text().splitlines()],
        "report": json.loads(out["report"].read_text()),
    }


def score_text(method: str, score) -> str:
    return str(score) if method == "simhash" else f"{score:.4f}"


def assert_same(result: neardup.DedupResult, cli: Dict[str, Any], method: str,
                kept_lines: List[str]) -> None:
    assert [[str(d.id), str(d.kept_id), score_text(method, d.score)]
            for d in result.duplicates] == cli["dups"]
    assert [{"representative": str(c["representative"]), "size": c["size"],
             "members": [str(m) for m in c["members"]]} for c in result.clusters] == cli["clusters"]
    assert [[str(p.id_a), str(p.id_b), score_text(method, p.score)]
            for p in result.pairs] == cli["pairs"]
    assert kept_lines == cli["kept"]
    mine = {k: v for k, v in result.report.items() if k not in VOLATILE}
    theirs = {k: v for k, v in cli["report"].items() if k not in VOLATILE}
    assert mine == theirs


@pytest.fixture(scope="module")
def corpus(real_english_lines: List[str]) -> List[str]:
    # Blank and symbols-only lines: documents without features.
    lines = real_english_lines[:3000]
    return lines[:1000] + [""] + lines[1000:2000] + ["□□□□□，□□□□□。", ""] + lines[2000:]


@pytest.mark.parametrize(
    "keywords,flags",
    [
        ({}, []),
        ({"method": "simhash"}, ["--method", "simhash"]),
        ({"threshold": 0.6, "keep": "longest"}, ["--threshold", "0.6", "--keep", "longest"]),
        ({"method": "simhash", "k": 5, "keep": "last", "empty": "drop"},
         ["--method", "simhash", "-k", "5", "--keep", "last", "--empty", "drop"]),
        ({"shingle_unit": "word", "shingle_size": 2, "keep": "shortest"},
         ["--shingle-unit", "word", "-n", "2", "--keep", "shortest"]),
    ],
)
def test_texts_match_the_command(corpus, tmp_path, run_cli, keywords, flags):
    path = write_lines(tmp_path / "en.txt", corpus)
    cli = run_dedup_cli(run_cli, path, tmp_path, *flags)
    result = neardup.dedup(corpus, pairs=True, **keywords)
    method = keywords.get("method", "accurate")
    # Texts are named by their 1-based positions, as the lines of one file.
    assert all(isinstance(i, int) for i in result.kept)
    assert result.kept == [int(p) + 1 for p in result.kept_positions]
    assert result.duplicates, "the corpus has near-duplicates"
    assert_same(result, cli, method, [corpus[i - 1] for i in result.kept])
    dropped = keywords.get("empty") == "drop"
    left_out = {d.id for d in result.duplicates}
    assert set(result.kept) == {i for i in range(1, len(corpus) + 1) if i not in left_out and
                                not (dropped and i in (1001, 2002, 2003))}


def test_chinese_matches_the_command(real_chinese_lines, tmp_path, run_cli):
    texts = real_chinese_lines[:1500]
    path = write_lines(tmp_path / "zh.txt", texts)
    cli = run_dedup_cli(run_cli, path, tmp_path)
    result = neardup.dedup((t.encode() for t in texts), pairs=True)
    assert_same(result, cli, "accurate", [texts[i - 1] for i in result.kept])


def test_records_with_ids_match_jsonl(corpus, tmp_path, run_cli):
    records: List[Dict[str, Any]] = []
    for i, text in enumerate(corpus[:2000]):
        record: Dict[str, Any] = {"text": text, "meta": {"url": f"https://example.org/{i}"}}
        if i % 3 == 0:
            record["id"] = f"doc-{i}"
        elif i % 3 == 1:
            record["id"] = 10_000 + i  # a number, as JSON has them
        # else no id: named by its position, as the CLI names the line
        record["score"] = (i * 7919) % 101
        records.append(record)
    path = tmp_path / "records.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    kept_lines = path.read_text(encoding="utf-8").splitlines()
    for keywords, flags in (({}, []), ({"priority_field": "score"}, ["--priority-field", "score"]),
                            ({"id_field": "meta.url"}, ["--id-field", "meta.url"])):
        cli = run_dedup_cli(run_cli, path, tmp_path, *flags)
        result = neardup.dedup(records, pairs=True, **keywords)
        assert_same(result, cli, "accurate", [kept_lines[int(p)] for p in result.kept_positions])
        assert [records[int(p)].get(keywords.get("id_field", "id"), int(p) + 1)
                for p in result.kept_positions][:50] == result.kept[:50] or \
            keywords.get("id_field") == "meta.url"
    # (id, text) tuples: the ids as given, any hashable object.
    pairs = [((i, "x"), text) for i, text in enumerate(corpus[:500])]
    result = neardup.dedup(pairs)
    by_text = neardup.dedup([text for _, text in pairs])
    assert result.kept == [(i - 1, "x") for i in by_text.kept]
    assert [d.id for d in result.duplicates] == [(d.id - 1, "x") for d in by_text.duplicates]


def test_texts_with_line_breaks_and_escapes(tmp_path, run_cli):
    base = ("A record that spans\nseveral lines,\twith tabs, \"quotes\", back\\slashes and "
            "a NUL \x00 character, about the dedup of in-memory collections")
    texts = [base, base.replace("\n", " "), "Something else\r\nentirely, about sketches and bands",
             base + "!", "🙂 emoji and ünïcödé text, long enough to have many character shingles"]
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    cli = run_dedup_cli(run_cli, path, tmp_path)
    result = neardup.dedup([{"text": t} for t in texts], pairs=True)
    lines = path.read_text().splitlines()
    assert_same(result, cli, "accurate", [lines[i - 1] for i in result.kept])
    assert neardup.dedup(texts).kept == result.kept


# --------------------------------------------------------------------------------------------------
# Bad input


def test_invalid_utf8_by_policy(tmp_path, run_cli):
    texts = [b"first document, a plain one about sketches", b"second \xff document, broken",
             b"third document, valid", "fourth \udc80 with a lone surrogate"]
    with pytest.raises(neardup.InvalidArgumentError,
                       match=r"^records\[1\]: invalid UTF-8 at byte offset 7$"):
        neardup.dedup(texts, invalid_utf8="reject")
    result = neardup.dedup(texts, invalid_utf8="reject", on_error="skip")
    assert result.kept == [1, 3]
    assert result.report["skipped"] == 2 and result.report["documents"] == 4
    assert result.report["first_errors"] == ["records[1]: invalid UTF-8 at byte offset 7",
                                             "records[3]: invalid UTF-8 at byte offset 7"]
    # The command skips the same documents of a file.
    path = tmp_path / "bad.txt"
    path.write_bytes(b"\n".join(t if isinstance(t, bytes) else t.encode("utf-8", "surrogatepass")
                                for t in texts) + b"\n")
    cli = run_dedup_cli(run_cli, path, tmp_path, "--invalid-utf8", "reject", "--on-error", "skip")
    assert cli["report"]["skipped"] == 2
    assert [line.encode() for line in cli["kept"]] == [texts[0], texts[2]]
    # Replaced (the default), they are documents like the others.
    assert neardup.dedup(texts).kept == [1, 2, 3, 4]


def test_bad_records_and_options():
    with pytest.raises(TypeError, match="records must be an iterable"):
        neardup.dedup(5)
    with pytest.raises(TypeError, match="not a single str"):
        neardup.dedup("one text")
    with pytest.raises(TypeError, match=r"records\[1\] must be a text, an \(id, text\) tuple"):
        neardup.dedup(["fine", 5])
    with pytest.raises(TypeError, match=r"records\[0\] must be an \(id, text\) pair"):
        neardup.dedup([("a", "b", "c")])
    with pytest.raises(TypeError, match=r"records\[0\] must be str or bytes, not int"):
        neardup.dedup([("a", 5)])
    with pytest.raises(neardup.InvalidArgumentError, match=r"^records\[1\]: no text field 'body'"):
        neardup.dedup([{"body": "x"}, {"text": "y"}], text_field="body")
    with pytest.raises(neardup.InvalidArgumentError,
                       match=r"records\[0\]: text field 'text' is a number"):
        neardup.dedup([{"text": 5}])
    skipped = neardup.dedup([{"text": "a document"}, {"txt": "b"}, {"text": ["c"]}],
                            on_error="skip")
    assert skipped.kept == [1] and skipped.report["skipped"] == 2
    assert skipped.report["first_errors"] == [
        "records[1]: no text field 'text'", "records[2]: text field 'text' is an array, "
        "expected a string"]
    with pytest.raises(neardup.InvalidArgumentError, match="unknown keep rule 'best'"):
        neardup.dedup(["a"], keep="best")
    with pytest.raises(neardup.InvalidArgumentError, match="unknown empty policy 'ignore'"):
        neardup.dedup(["a"], empty="ignore")
    with pytest.raises(neardup.InvalidArgumentError, match="unknown error policy 'warn'"):
        neardup.dedup(["a"], on_error="warn")
    with pytest.raises(neardup.InvalidArgumentError, match="unknown method 'minhash'"):
        neardup.dedup(["a"], method="minhash")
    with pytest.raises(neardup.InvalidArgumentError, match="cannot be combined with keep"):
        neardup.dedup([{"text": "a", "p": 1}], priority_field="p", keep="longest")
    with pytest.raises(neardup.InvalidArgumentError, match="no record has the priority field"):
        neardup.dedup([{"text": "a"}], priority_field="p")
    with pytest.raises(TypeError, match="unexpected keyword argument 'treshold'"):
        neardup.dedup(["a"], treshold=0.5)
    with pytest.raises(ValueError, match="threads must be 0"):
        neardup.dedup(["a"], threads=5000)


def test_null_ids_are_refused():
    # A null id (None, NaN, pandas' NA) names no document: refused as the CLI refuses "id": null,
    # for (id, text) tuples too (which used to keep None as the id) and NaN (kept as nan).
    text = "the same words in both of these two documents"
    cases = [
        ([(None, text), ("b", text)], r"^records\[0\]: the id is null, expected a string"),
        ([{"id": "a", "text": text}, {"id": None, "text": text}],
         r"^records\[1\]: id field 'id' is null, expected a string or number$"),
        ([{"id": float("nan"), "text": text}],
         r"^records\[0\]: id field 'id' is null \(nan\), expected a string or number$"),
        ([(np.float64("nan"), text)], r"^records\[0\]: the id is null \(nan\)"),
    ]
    for records, message in cases:
        with pytest.raises(neardup.InvalidArgumentError, match=message):
            neardup.dedup(records)
    skipped = neardup.dedup([("a", text), (None, text), {"id": float("nan"), "text": text},
                             ("d", text)], on_error="skip")
    assert skipped.kept == ["a"] and [d.id for d in skipped.duplicates] == ["d"]
    assert skipped.report["skipped"] == 2 and skipped.report["documents"] == 4
    assert skipped.report["first_errors"] == [
        "records[1]: the id is null, expected a string or number",
        "records[2]: id field 'id' is null (nan), expected a string or number"]
    # Numbers are ids (the CLI keeps them as written); a dict without an id is named by position.
    assert neardup.dedup([(1.5, text), {"text": text}]).duplicates[0][:2] == (2, 1.5)


def test_boundary_sigmas(corpus):
    # --boundary-sigmas: the library's default (3) decides pairs near the threshold by their
    # exact Jaccard; 0 leaves them to the sketch. neardup.dask's answer is boundary_sigmas=0 with
    # all_pairs (test_dask.py compares the two).
    assert inspect.signature(neardup.dedup).parameters["boundary_sigmas"].default == 3
    default = neardup.dedup(corpus, threshold=0.6)
    assert default.report["boundary_pairs"] > 0
    assert neardup.dedup(corpus, threshold=0.6, boundary_sigmas=3).duplicates == \
        default.duplicates
    by_sketch = neardup.dedup(corpus, threshold=0.6, boundary_sigmas=0)
    assert by_sketch.report["boundary_pairs"] == 0
    assert by_sketch.duplicates != default.duplicates
    for bad in (-1, 11, float("nan")):
        with pytest.raises(neardup.InvalidArgumentError, match="boundary"):
            neardup.dedup(corpus[:10], boundary_sigmas=bad)
    with pytest.raises(TypeError, match="boundary_sigmas must be a number"):
        neardup.dedup(corpus[:10], boundary_sigmas="3")


def test_empty_documents_and_repeated_ids():
    texts = ["a document with words", "", "another document, different"]
    with pytest.raises(neardup.InvalidArgumentError,
                       match=r"^records\[1\]: no features: .*empty='keep' or 'drop'"):
        neardup.dedup(texts, empty="fail")
    assert neardup.dedup(texts, empty="drop").kept == [1, 3]
    result = neardup.dedup(texts)
    assert result.kept == [1, 2, 3] and result.report["empty_documents"] == 1
    records = [("x", "one text of words"), ("y", "another text of words"), ("x", "a third")]
    assert neardup.dedup(records).report["duplicate_ids"] == 1
    with pytest.raises(neardup.InvalidArgumentError,
                       match=r"records\[2\]: id 'x' repeats the id of records\[0\]"):
        neardup.dedup(records, unique_ids=True)
    assert neardup.dedup([]).kept == []


def test_temporary_files_are_removed(tmp_path, monkeypatch, corpus):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    neardup.dedup(corpus[:200])
    with pytest.raises(neardup.InvalidArgumentError):
        neardup.dedup(["fine", b"\xff"], invalid_utf8="reject")
    with pytest.raises(neardup.InvalidArgumentError):
        neardup.dedup(["fine", ""], empty="fail")
    assert os.listdir(tmp_path) == []


# --------------------------------------------------------------------------------------------------
# Threads


def test_concurrent_runs_give_the_serial_results(corpus):
    parts = [corpus[i::3] for i in range(3)]
    serial = [neardup.dedup(part, threads=1, pairs=True) for part in parts]

    def run(i: int) -> neardup.DedupResult:
        return neardup.dedup(parts[i % 3], threads=2, pairs=True)

    with ThreadPoolExecutor(max_workers=4) as pool:
        for i, result in enumerate(pool.map(run, range(8))):
            expected = serial[i % 3]
            assert result.kept == expected.kept
            assert result.duplicates == expected.duplicates
            assert result.clusters == expected.clusters
            assert result.pairs == expected.pairs
