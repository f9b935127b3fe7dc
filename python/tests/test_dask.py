"""neardup.dask against `neardup dedup`: the same kept lines, duplicates and clusters, byte for
byte, on a distributed.LocalCluster of 2 worker processes and on a cluster of separate
dask-scheduler / dask-worker processes on loopback; a worker killed during a run; bad input."""

import glob
import gzip
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

distributed = pytest.importorskip("distributed")
import dask.bag as db  # noqa: E402
import dask.dataframe as dd  # noqa: E402
import pandas as pd  # noqa: E402

import neardup  # noqa: E402
import neardup.dask as ndask  # noqa: E402

CLI = os.environ.get("NEARDUP_CLI", "neardup")
PYTHON = sys.executable


def _english_paragraphs(limit=4000):
    paragraphs = []
    pages = sorted(glob.glob("/usr/share/libreoffice/help/en-US/text/**/*.html", recursive=True))
    for path in pages[:1500]:
        with open(path, encoding="utf-8", errors="replace") as f:
            raw = f.read()
        for para in re.findall(r"<p[^>]*>(.*?)</p>", raw, re.S):
            text = " ".join(re.sub(r"<[^>]+>", "", para).split())
            if len(text) > 60:
                paragraphs.append(text)
        if len(paragraphs) >= limit:
            break
    if len(paragraphs) < 500:
        pytest.skip("Debian's libreoffice-help-en-us is not installed (scripts/install-deps.sh)")
    return paragraphs


def make_documents(n, seed):
    """Real English paragraphs, lightly edited copies of earlier documents (near-duplicates),
    exact copies, and blank or symbol-only documents."""
    rng = random.Random(seed)
    base = _english_paragraphs()
    texts = []
    for i in range(n):
        r = rng.random()
        if texts and r < 0.25:
            words = rng.choice(texts).split() or ["x"]
            for _ in range(max(1, len(words) // 25)):
                words[rng.randrange(len(words))] = rng.choice(["the", "new", "old", "big", "é"])
            texts.append(" ".join(words))
        elif texts and r < 0.3:
            texts.append(rng.choice(texts))
        elif r < 0.33:
            texts.append(rng.choice(["", "   ", "□□□□，□□。", "!!!"]))
        else:
            texts.append(base[rng.randrange(len(base))] + " " + base[rng.randrange(len(base))])
    return texts


def write_jsonl(path, texts, ids=True, priority=False, bad_every=0, seed=0):
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for i, text in enumerate(texts):
            if bad_every and i % bad_every == bad_every - 1:
                f.write('{"id": "broken", "text": \n')  # malformed JSON
                continue
            record = {"text": text}
            if ids:
                record = {"id": f"doc-{i}", **record}
            if priority:
                record["score"] = rng.randrange(5)
            f.write(json.dumps(record, ensure_ascii=False) + "\n")


def write_plain(path, texts, crlf=False):
    end = "\r\n" if crlf else "\n"
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("\ufeff")  # a byte order mark: part of no text, copied with the kept line
        for text in texts:
            f.write(text.replace("\n", " ") + end)


def run_cli(inputs, out, *flags):
    # The Dask job finds the clusters of all pairs, each decided by its sketch: neardup dedup
    # --all-pairs --boundary-sigmas 0.
    os.makedirs(out, exist_ok=True)
    command = [CLI, "dedup", *inputs, "-o", f"{out}/kept", "--dups", f"{out}/dups.tsv",
               "--clusters", f"{out}/clusters.jsonl", "--all-pairs", "--boundary-sigmas", "0",
               "-q", *flags]
    subprocess.run(command, check=True, capture_output=True)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def kept_parts(outdir):
    return b"".join(read(p) for p in sorted(glob.glob(f"{outdir}/kept/part-*")))


def assert_same_as_cli(cli_dir, dask_dir):
    assert kept_parts(dask_dir) == read(f"{cli_dir}/kept"), "kept lines differ"
    assert read(f"{dask_dir}/dups.tsv") == read(f"{cli_dir}/dups.tsv"), "duplicates differ"
    assert read(f"{dask_dir}/clusters.jsonl") == read(f"{cli_dir}/clusters.jsonl"), \
        "clusters differ"


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    texts = make_documents(8000, seed=7)
    write_jsonl(root / "docs.jsonl", texts)
    return root, texts


CASES = {
    # name: (dask options, CLI flags)
    "defaults": ({}, []),
    "last-drop-empty-0.6": ({"keep": "last", "empty": "drop", "threshold": 0.6},
                            ["--keep", "last", "--empty", "drop", "--threshold", "0.6"]),
    "longest": ({"keep": "longest"}, ["--keep", "longest"]),
    # Fewer shuffle targets than partitions: pieces of many partitions meet in each.
    "shuffle-3": ({"shuffle_partitions": 3}, []),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_files_equal_cli(client, corpus, tmp_path, case):
    root, _ = corpus
    options, flags = CASES[case]
    run_cli([str(root / "docs.jsonl")], tmp_path / "cli", *flags)
    # Partitions of 256 KiB: the file is cut in ranges whose edges fall inside lines.
    report = ndask.dedup_files([str(root / "docs.jsonl")], str(tmp_path / "dask"), client=client,
                               partition_bytes=256 << 10, **options)
    assert report["partitions"] > 4
    assert report["duplicates"] > 700 and report["clusters"] > 300
    assert_same_as_cli(tmp_path / "cli", tmp_path / "dask")


def test_plain_text_folders_and_compression(client, tmp_path):
    texts = make_documents(6000, seed=11)
    folder = tmp_path / "in"
    (folder / "b").mkdir(parents=True)
    write_plain(folder / "a.txt", texts[:2500], crlf=True)
    write_plain(folder / "b" / "c.txt", texts[2500:4000])
    with gzip.open(folder / "b" / "d.txt.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(texts[4000:]))  # no newline after the last line
    run_cli([str(folder)], tmp_path / "cli", "--keep", "shortest")
    report = ndask.dedup_files([str(folder)], str(tmp_path / "dask"), client=client,
                               keep="shortest", partition_bytes=64 << 10)
    assert report["documents"] == 6000
    assert_same_as_cli(tmp_path / "cli", tmp_path / "dask")
    # Ids name the lines ("path:line" with several inputs).
    assert re.match(rb".+/in/.+\.txt(\.gz)?:\d+\t", read(tmp_path / "dask" / "dups.tsv"))


def test_skipped_lines_and_priority(client, tmp_path):
    texts = make_documents(5000, seed=3)
    write_jsonl(tmp_path / "p.jsonl", texts, priority=True, bad_every=97, seed=5)
    flags = ["--on-error", "skip", "--priority-field", "score"]
    run_cli([str(tmp_path / "p.jsonl")], tmp_path / "cli", *flags)
    report = ndask.dedup_files([str(tmp_path / "p.jsonl")], str(tmp_path / "dask"),
                               client=client, on_error="skip", priority_field="score",
                               partition_bytes=100 << 10)
    assert report["skipped"] == 5000 // 97
    assert report["first_errors"][0].startswith(f"{tmp_path}/p.jsonl:97: ")
    assert_same_as_cli(tmp_path / "cli", tmp_path / "dask")


def test_bag_and_dataframe_equal_cli(client, corpus, tmp_path):
    root, texts = corpus
    run_cli([str(root / "docs.jsonl")], tmp_path / "cli")
    cli_kept = [json.loads(line)["id"] for line in read(tmp_path / "cli" / "kept").splitlines()]
    records = [{"id": f"doc-{i}", "text": t} for i, t in enumerate(texts)]
    bag = db.from_sequence(records, npartitions=7)
    result = ndask.dedup(bag)
    assert result.dups_tsv == read(tmp_path / "cli" / "dups.tsv")
    assert result.clusters_jsonl == read(tmp_path / "cli" / "clusters.jsonl")
    assert [r["id"] for r in result.kept.compute()] == cli_kept
    assert result.duplicates[0][0].startswith("doc-") and 0 < result.duplicates[0][2] <= 1
    frame = dd.from_pandas(pd.DataFrame(records), npartitions=5)
    by_frame = ndask.dedup(frame)
    assert by_frame.dups_tsv == result.dups_tsv
    assert by_frame.kept.compute()["id"].tolist() == cli_kept
    # A bag of str: named by position, as the CLI names the lines of one plain-text file.
    plain = tmp_path / "plain.txt"
    with open(plain, "w", encoding="utf-8") as f:
        f.write("\n".join(texts) + "\n")
    run_cli([str(plain)], tmp_path / "cli-plain")
    by_position = ndask.dedup(db.from_sequence(texts, npartitions=4))
    assert by_position.dups_tsv == read(tmp_path / "cli-plain" / "dups.tsv")
    assert by_position.clusters_jsonl == read(tmp_path / "cli-plain" / "clusters.jsonl")


def test_bad_input(client, tmp_path):
    texts = make_documents(300, seed=1)
    write_jsonl(tmp_path / "bad.jsonl", texts, bad_every=50)
    with pytest.raises(neardup.InvalidArgumentError, match=r"bad\.jsonl:50: .*--on-error skip"):
        ndask.dedup_files([str(tmp_path / "bad.jsonl")], str(tmp_path / "out"), client=client)
    assert not os.path.exists(tmp_path / "out")  # nothing is left behind
    assert not glob.glob(f"{tmp_path}/out.tmp-*")
    with pytest.raises(neardup.NotFoundError, match="missing.jsonl"):
        ndask.dedup_files([str(tmp_path / "missing.jsonl")], str(tmp_path / "out"), client=client)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(neardup.FailedPreconditionError, match="not empty"):
        ndask.dedup_files([str(tmp_path / "bad.jsonl")], str(tmp_path / "full"), client=client)
    with pytest.raises(neardup.InvalidArgumentError, match="not a folder"):
        ndask.dedup_files([str(tmp_path / "bad.jsonl")], "/dev/null", client=client,
                          on_error="skip")
    # A link to a folder: the folder is written, the link stays.
    (tmp_path / "target").mkdir()
    os.symlink(tmp_path / "target", tmp_path / "link")
    ndask.dedup_files([str(tmp_path / "bad.jsonl")], str(tmp_path / "link"), client=client,
                      on_error="skip")
    assert os.path.islink(tmp_path / "link") and os.path.exists(tmp_path / "target" / "dups.tsv")
    with pytest.raises(neardup.InvalidArgumentError, match="keep must be one of"):
        ndask.dedup_files([str(tmp_path / "bad.jsonl")], str(tmp_path / "out"), keep="best")
    with pytest.raises(TypeError, match="Bag or DataFrame"):
        ndask.dedup([{"text": "a"}])
    with pytest.raises(TypeError, match="records must be"):
        ndask.dedup(db.from_sequence([1, 2, 3], npartitions=1))
    # Keywords: the job's own names (not those of an internal class), the accurate method only.
    bag = db.from_sequence(texts[:20], npartitions=1)
    with pytest.raises(neardup.InvalidArgumentError,
                       match=r"accurate method only.*method='simhash'.*neardup.dedup"):
        ndask.dedup(bag, method="simhash")
    with pytest.raises(TypeError,
                       match=r"^dedup\(\) got an unexpected keyword argument 'treshold'"):
        ndask.dedup(bag, treshold=0.5)
    with pytest.raises(TypeError, match=r"^dedup_files\(\) got an unexpected keyword argument"):
        ndask.dedup_files([str(tmp_path / "bad.jsonl")], str(tmp_path / "out"), client=client,
                          pairs=True)
    assert ndask.dedup(bag, method="accurate").report["documents"] == 20


def test_missing_text_and_null_ids_are_bad_records(client):
    # A DataFrame holds missing values as NaN (object and float columns) or NA (string dtype):
    # bad records like None, named by their record number and skipped under on_error='skip' (they
    # raised a TypeError without the record). Null ids are refused as neardup.dedup and the CLI
    # refuse them (they were named by position, or as "nan").
    text = "the same words in all of these documents, and a few more words of them"
    frame = pd.DataFrame({"id": [1, 2, None, 4, 5], "text": [text, float("nan"), text, text, None]})
    with pytest.raises(neardup.InvalidArgumentError,
                       match=r"^record 2: no text \(nan\) \(--on-error skip leaves"):
        ndask.dedup(dd.from_pandas(frame, npartitions=2))
    result = ndask.dedup(dd.from_pandas(frame, npartitions=2), on_error="skip")
    assert result.report["skipped"] == 3
    assert result.report["first_errors"] == [
        "record 2: no text (nan)",
        "record 3: id field 'id' is null (nan), expected a string or number",
        "record 5: no text (None)"]
    # The ids of an int column with a missing value (float in pandas) are the ints.
    assert result.dups_tsv == b"4\t1\t1.0000\n"
    assert result.kept.compute()["id"].tolist() == [1]
    strings = pd.DataFrame({"text": pd.array([text, pd.NA, text], dtype="string")})
    result = ndask.dedup(dd.from_pandas(strings, npartitions=1), on_error="skip")
    assert result.report["first_errors"] == ["record 2: no text (<NA>)"]
    assert result.dups_tsv == b"3\t1\t1.0000\n"

    bag = db.from_sequence([{"id": "a", "text": text}, {"id": None, "text": text}, (None, text),
                            {"id": True, "text": text}, ("e", text), {"txt": text}],
                           npartitions=2)
    with pytest.raises(neardup.InvalidArgumentError,
                       match=r"^record 2: id field 'id' is null, expected a string or number"):
        ndask.dedup(bag)
    result = ndask.dedup(bag, on_error="skip")
    assert result.report["first_errors"] == [
        "record 2: id field 'id' is null, expected a string or number",
        "record 3: the id of an (id, text) pair is null, expected a string or number",
        "record 4: id field 'id' is a boolean, expected a string or number",
        "record 6: no text field 'text'"]
    assert result.dups_tsv == b"e\ta\t1.0000\n"
    assert result.kept.compute() == [{"id": "a", "text": text}]
    # The same records to neardup.dedup: the same bad ones.
    same = neardup.dedup(bag.compute()[:5], on_error="skip")
    assert [m.split(": ", 1)[1] for m in same.report["first_errors"]] == [
        "id field 'id' is null, expected a string or number",
        "the id is null, expected a string or number",
        "id field 'id' is a boolean, expected a string or number"]


def test_dedup_files_takes_one_path(client, tmp_path):
    texts = make_documents(600, seed=5)
    path = tmp_path / "one.txt"
    write_plain(path, texts)
    run_cli([str(path)], tmp_path / "cli")
    # A str is one path (its characters were taken as file names), and so is an os.PathLike.
    for number, one in enumerate((str(path), path)):
        ndask.dedup_files(one, str(tmp_path / f"dask{number}"), client=client)
        assert_same_as_cli(tmp_path / "cli", tmp_path / f"dask{number}")
    with pytest.raises(TypeError, match="inputs must be paths"):
        ndask.dedup_files([path, 5], str(tmp_path / "out"), client=client)


def test_dedup_with_boundary_sigmas_0_is_the_dask_answer(client, corpus):
    # neardup.dask decides every pair by its sketch: neardup.dedup(boundary_sigmas=0,
    # all_pairs=True) gives its answer; the default decides pairs near the threshold by their
    # exact Jaccard, and differs.
    _, texts = corpus
    records = [{"id": f"doc-{i}", "text": t} for i, t in enumerate(texts)]
    by_dask = ndask.dedup(db.from_sequence(records, npartitions=4))
    same = neardup.dedup(records, all_pairs=True, boundary_sigmas=0)
    assert [(d.id, d.kept_id) for d in same.duplicates] == [
        (a, b) for a, b, _ in by_dask.duplicates]
    assert same.clusters == by_dask.clusters
    default = neardup.dedup(records, all_pairs=True)
    assert default.report["boundary_pairs"] > 0
    assert [d.id for d in default.duplicates] != [d.id for d in same.duplicates]


def test_fingerprinters_and_options_in_tasks(client):
    # Task arguments are pickled: a Fingerprinter and MethodOptions travel by their options.
    texts = make_documents(200, seed=9)
    for fingerprinter in (neardup.Fingerprinter(), neardup.Fingerprinter("simhash", k=5)):
        assert client.submit(fingerprinter.sketch, texts[0]).result() == \
            fingerprinter.sketch(texts[0])
        assert client.submit(fingerprinter.simhash_batch, texts).result().tolist() == \
            fingerprinter.simhash_batch(texts).tolist()
    options = neardup.MethodOptions(threshold=0.7, max_document_bytes=1000)
    assert client.submit(lambda o: (o.settings, o.max_document_bytes), options).result() == \
        (options.settings, 1000)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_workers(address, count, timeout=60):
    with distributed.Client(address, timeout=30) as c:
        c.wait_for_workers(count, timeout=timeout)


@pytest.fixture(scope="module")
def separate_cluster(tmp_path_factory):
    """A dask-scheduler and a dask-worker (nanny, 2 worker processes) on loopback."""
    tmp_path = tmp_path_factory.mktemp("cluster")
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = dict(os.environ)
    procs = [subprocess.Popen([PYTHON, "-m", "distributed.cli.dask_scheduler", "--host",
                               "127.0.0.1", "--port", str(port), "--dashboard-address", ":0"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)]
    time.sleep(1)
    procs.append(subprocess.Popen([PYTHON, "-m", "distributed.cli.dask_worker", address,
                                   "--nworkers", "2", "--nthreads", "1", "--host", "127.0.0.1",
                                   "--no-dashboard", "--local-directory", str(tmp_path / "w")],
                                  env=env, stdout=subprocess.DEVNULL,
                                  stderr=open(tmp_path / "worker.log", "w"),
                                  start_new_session=True))
    try:
        _wait_for_workers(address, 2)
        yield address, procs[1]
    finally:
        for p in reversed(procs):
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def test_command_line_on_separate_processes(separate_cluster, corpus, tmp_path):
    address, _ = separate_cluster
    root, _ = corpus
    run_cli([str(root / "docs.jsonl")], tmp_path / "cli")
    done = subprocess.run([PYTHON, "-m", "neardup.dask", str(root / "docs.jsonl"), "--scheduler",
                           address, "-o", str(tmp_path / "dask"), "--partition-mb", "0.25"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "duplicates in" in done.stderr
    assert_same_as_cli(tmp_path / "cli", tmp_path / "dask")
    # Errors: exit 1 with a message, never a hang.
    again = subprocess.run([PYTHON, "-m", "neardup.dask", str(root / "docs.jsonl"),
                            "--scheduler", address, "-o", str(tmp_path / "dask")],
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 1 and "not empty" in again.stderr
    unreachable = subprocess.run([PYTHON, "-m", "neardup.dask", str(root / "docs.jsonl"),
                                  "--scheduler", f"tcp://127.0.0.1:{_free_port()}",
                                  "--connect-timeout", "2", "-o", str(tmp_path / "x")],
                                 capture_output=True, text=True, timeout=120)
    assert unreachable.returncode == 1 and "error" in unreachable.stderr


def test_default_partition_size():
    # 64 MiB ranges, smaller when each worker thread would get fewer than 4, not under 4 MiB;
    # compressed files (one partition each) are not counted.
    from neardup.dask import _job
    mib = 1 << 20

    def files(*sizes):
        return [_job.InputFile(f"f{i}{ext}", f"/x/f{i}{ext}", False, size)
                for i, (size, ext) in enumerate(sizes)]
    assert _job.auto_partition_bytes(files((256 * mib, ".txt")), 2) == 32 * mib
    assert _job.auto_partition_bytes(files((2560 * mib, ".txt")), 2) == 64 * mib
    assert _job.auto_partition_bytes(files((1 * mib, ".txt")), 2) == 4 * mib
    assert _job.auto_partition_bytes(files((100 * mib, ".txt"), (100 * mib, ".txt")), 1) == 50 * mib
    assert _job.auto_partition_bytes(files((256 * mib, ".txt"), (9000 * mib, ".gz")), 2) == 32 * mib
    assert _job.auto_partition_bytes([], 8) == 4 * mib
    ranges = _job.plan_ranges(files((256 * mib, ".txt")), _job.auto_partition_bytes(
        files((256 * mib, ".txt")), 2))
    assert len(ranges) == 8 and ranges[-1].end == 256 * mib


def test_local_cluster_worker_malloc(monkeypatch):
    # The command's local cluster starts its workers with glibc's malloc settings of
    # WORKER_MALLOC, not Dask's; a variable the user set is passed on as it is.
    from neardup.dask import __main__ as command
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "0")
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_")  # restored (unset) after the test
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")
    cluster = command._local_cluster(1)
    try:
        with distributed.Client(cluster) as c:
            seen = list(c.run(lambda: (os.environ.get("MALLOC_TRIM_THRESHOLD_"),
                                       os.environ.get("MALLOC_MMAP_THRESHOLD_"))).values())
    finally:
        cluster.close()
    assert seen == [(command.WORKER_MALLOC["MALLOC_TRIM_THRESHOLD_"], "65536")]


def test_command_line_local_cluster_and_ctrl_c(corpus, tmp_path):
    # Without --scheduler the command starts its own cluster (workers forked from a server that
    # imported the job): the same outputs, and nothing on standard error but its own lines.
    root, _ = corpus
    run_cli([str(root / "docs.jsonl")], tmp_path / "cli")
    done = subprocess.run([PYTHON, "-m", "neardup.dask", str(root / "docs.jsonl"), "-o",
                           str(tmp_path / "dask"), "--workers", "2", "--partition-mb", "0.25"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert all(line.startswith("neardup.dask: ") for line in done.stderr.splitlines()), done.stderr
    assert_same_as_cli(tmp_path / "cli", tmp_path / "dask")
    # Numbers out of range: exit 2 with a message naming the flag, before any cluster starts
    # (--workers -1 used to hang).
    for flag, bad, shown in (("--partition-mb", "0", "0.0"), ("--partition-mb", "-1", "-1.0"),
                             ("--partition-mb", "nan", "nan"), ("--partition-mb", "inf", "inf"),
                             ("--connect-timeout", "-1", "-1.0"), ("--workers", "-1", "-1"),
                             ("--shuffle-partitions", "-2", "-2")):
        refused = subprocess.run([PYTHON, "-m", "neardup.dask", str(root / "docs.jsonl"), "-o",
                                  str(tmp_path / "bad"), flag, bad],
                                 capture_output=True, text=True, timeout=60)
        assert refused.returncode == 2, refused.stderr
        assert refused.stderr.startswith(f"neardup.dask: {flag} must be ") and \
            refused.stderr.endswith(f"; got {shown}\n"), refused.stderr
    assert not os.path.exists(tmp_path / "bad")
    # Ctrl-C (SIGINT to the process group) during the job: exit 130 with one line, no workers
    # interrupted on their own (a traceback each), no output folder, and no process of the group
    # left. (A worker stopped while it sends data may still log that; Dask's own line.)
    write_jsonl(tmp_path / "big.jsonl", make_documents(30000, seed=5))
    job = subprocess.Popen([PYTHON, "-m", "neardup.dask", str(tmp_path / "big.jsonl"), "-o",
                            str(tmp_path / "out"), "--workers", "2", "--partition-mb", "0.5"],
                           stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines = []
    try:
        for line in job.stderr:
            lines.append(line)
            if line.startswith("neardup.dask: sign:"):
                os.killpg(job.pid, signal.SIGINT)
                break
        lines += job.stderr.readlines()
        assert job.wait(timeout=60) == 130, "".join(lines)
        assert "neardup.dask: interrupted\n" in lines and \
            "KeyboardInterrupt" not in "".join(lines), "".join(lines)
        assert not glob.glob(str(tmp_path / "out*"))
        deadline = time.monotonic() + 30
        while True:
            try:
                os.killpg(job.pid, 0)
            except ProcessLookupError:
                break
            assert time.monotonic() < deadline, "processes of the job are left"
            time.sleep(0.1)
    finally:
        try:  # whatever failed above, nothing of the job outlives the test
            os.killpg(job.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        job.wait()


def _worker_pids(address):
    with distributed.Client(address, timeout=30) as c:
        return sorted(c.run(os.getpid).values())


# Imports of these names fail in the child, as on a machine without Dask.
HIDE_DASK = """
import importlib.abc, runpy, sys
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("dask", "distributed"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Hide())
"""


def test_without_dask_says_what_to_install(tmp_path):
    # The command: one line and exit 1, not a traceback from the package's import.
    (tmp_path / "in.txt").write_text("a line\n")
    done = subprocess.run(
        [PYTHON, "-c", HIDE_DASK + "sys.argv = ['neardup.dask', sys.argv[1], '-o', sys.argv[2]]\n"
         "runpy.run_module('neardup.dask', run_name='__main__', alter_sys=True)",
         str(tmp_path / "in.txt"), str(tmp_path / "out")],
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("neardup.dask: ") and "python3-distributed" in done.stderr, \
        done.stderr
    assert not (tmp_path / "out").exists()
    # The library: importing neardup.dask works; using it names what is missing.
    done = subprocess.run(
        [PYTHON, "-c", HIDE_DASK + "import neardup.dask\n"
         "try:\n    neardup.dask.dedup_files\nexcept ImportError as e:\n    print(e)\n"],
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "needs Dask distributed" in done.stdout and "python3-distributed" in done.stdout, \
        done.stdout


def test_worker_killed_during_run(separate_cluster, tmp_path):
    address, _ = separate_cluster
    texts = make_documents(30000, seed=5)
    write_jsonl(tmp_path / "big.jsonl", texts)
    run_cli([str(tmp_path / "big.jsonl")], tmp_path / "cli")
    pids = _worker_pids(address)
    job = subprocess.Popen([PYTHON, "-m", "neardup.dask", str(tmp_path / "big.jsonl"),
                            "--scheduler", address, "-o", str(tmp_path / "dask"),
                            "--partition-mb", "0.5"], stderr=subprocess.PIPE, text=True)
    # Once the signatures are on the workers, one of them dies (kill -9): its partitions are lost
    # and computed again by Dask on the worker its nanny starts.
    lines = []
    for line in job.stderr:
        lines.append(line)
        if line.startswith("neardup.dask: sign:"):
            os.kill(pids[0], signal.SIGKILL)
            break
    lines += job.stderr.readlines()
    assert job.wait(timeout=300) == 0, "".join(lines)
    assert _worker_pids(address) != pids  # the nanny started a new worker
    assert_same_as_cli(tmp_path / "cli", tmp_path / "dask")


def _range_documents(signer, fmt, path, cuts):
    """The (id or text length, empty) of every line of the ranges [cuts[i], cuts[i+1]), and the
    lines counted."""
    from neardup import _neardup
    documents, lines = [], 0
    for start, end in zip(cuts, cuts[1:]):
        part = signer.sign_range(str(path), start, end, fmt)
        documents += [(lines + int(local), i, bool(flags & 2)) for local, i, flags in
                      zip(part["local"], part["ids"], part["flags"])]
        documents += [(lines + int(local), message, None) for local, message in part["bad"]]
        lines += part["lines"]
    whole = signer.sign_range(str(path), 0, _neardup.WHOLE_FILE, fmt)
    assert lines == whole["lines"]
    return sorted(documents)


def test_ranges_cut_anywhere_read_every_line_once(tmp_path):
    """A file cut in ranges at any byte gives each line to exactly one range, as the whole file
    reads it (line ends \\n and \\r\\n, blank lines, a byte order mark, a last line without a
    newline, a malformed line)."""
    from neardup import _neardup
    signer = _neardup.JobSigner("method=accurate threshold=0.8")
    lines = ['{"id": "a", "text": "first line of text"}', "", '{"id": "b", "text": "x"}\r',
             '{"id": "c", "text": "naïve café — ünïcödé"}', "not json", '{"id": "d", "text": ""}',
             '{"id": "f", "text": "xy"}\r', '{"id": "g", "text": "xyz"}\r',
             '{"id": "e", "text": "the last one, without a newline"}']
    path = tmp_path / "r.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "\n".join(lines).encode("utf-8"))
    size = path.stat().st_size
    fmt = _neardup.LineFormat(True)
    whole = _range_documents(signer, fmt, path, [0, size])
    assert [d[1] for d in whole if d[2] is not None] == [b"a", b"b", b"c", b"d", b"f", b"g", b"e"]
    for cut in range(size + 1):
        assert _range_documents(signer, fmt, path, [0, cut, size]) == whole, cut
    rng = random.Random(1)
    for _ in range(200):
        cuts = sorted({0, size, *(rng.randrange(size + 1) for _ in range(rng.randrange(1, 6)))})
        assert _range_documents(signer, fmt, path, cuts) == whole, cuts
    # Lines over the limit are bad documents, measured as the whole file's reader measures them.
    short = _neardup.LineFormat(True, max_line_bytes=25)
    whole = _range_documents(signer, short, path, [0, size])
    assert sum("longer than the limit of 25 bytes" in str(d[1]) for d in whole) >= 3
    for cut in range(size + 1):
        assert _range_documents(signer, short, path, [0, cut, size]) == whole, cut


def _model_shared(rows):
    """The rows of keys held twice or more, sorted by key then ordinal (a model of shared_rows)."""
    counts = {}
    for key, _ in rows:
        counts[key] = counts.get(key, 0) + 1
    return sorted((k, o) for k, o in rows if counts[k] >= 2)


def _runs_of(rows):
    runs = {}
    for key, ordinal in rows:
        runs.setdefault(key, []).append(ordinal)
    return runs


def _piece_rows(piece):
    """The (key, ordinal) rows of a band_pieces piece (a model of its layout: partition, bands,
    each band's count, then each band's (band key, local) rows)."""
    partition, bands = int(piece[0]), int(piece[1])
    counts = [int(c) for c in piece[2:2 + bands]]
    words = piece[2 + bands:].tolist()
    assert len(words) == 2 * sum(counts)
    rows, at = [], 0
    for band, count in enumerate(counts):
        for _ in range(count):
            rows.append(((band << 32) | words[at], (partition << 32) | words[at + 1]))
            at += 2
    return rows


def _targets(keys, partitions):
    """The target partition of band rows' keys (a model of the extension's rule: the band key's
    bits mixed with the band number's)."""
    import numpy as np
    mixed = (keys & np.uint64(0xFFFFFFFF)) ^ (keys >> np.uint64(32)) * np.uint64(0x9E3779B1)
    return (mixed % np.uint64(partitions)).astype(np.int64)


def test_band_shuffle_steps_against_models():
    """The job's shuffle and passes (band_pieces, shared_rows, star_pieces, mixed_pieces,
    verify_stars) against pure-Python models, on keys drawn from a small range so that buckets
    of every size occur; then their errors."""
    import numpy as np
    from neardup import _neardup
    from neardup.dask import _job

    rng = np.random.default_rng(5)
    sources, targets, bands = 3, 4, 5
    parts, model_rows = [], []
    for p in range(sources):
        n = int(rng.integers(0, 400)) if p else 0  # partition 0 has no documents
        local = np.sort(rng.choice(1000, size=n, replace=False)).astype(np.uint64)
        keys = rng.integers(0, 60, size=(n, bands)).astype(np.uint32)
        usable = rng.random(n) < 0.9
        parts.append((keys, local, usable))
        for i in range(n):
            if usable[i]:
                model_rows += [((b << 32) | int(keys[i, b]), (p << 32) | int(local[i]))
                               for b in range(bands)]
    pieces = [_neardup.band_pieces(k, loc, u, p, targets) for p, (k, loc, u) in enumerate(parts)]
    got_rows = []
    for per_target in pieces:
        assert len(per_target) == targets
        for t, piece in enumerate(per_target):
            assert piece.dtype == np.uint32 and piece.ndim == 1
            rows = _piece_rows(piece)
            keys = np.array([k for k, _ in rows], dtype=np.uint64)
            assert (_targets(keys, targets) == t).all()
            # Each band's rows in document order.
            assert rows == sorted(rows, key=lambda r: (r[0] >> 32, r[1]))
            got_rows += rows
    assert sorted(got_rows) == sorted(model_rows)

    buckets = []
    for t in range(targets):
        mine = [p[t] for p in pieces]
        shared = _neardup.shared_rows(mine)
        expected = _model_shared([r for m in mine for r in _piece_rows(m)])
        assert [tuple(r) for r in shared.tolist()] == expected
        # Pieces out of partition order: runs sorted by ordinal all the same.
        assert (_neardup.shared_rows(mine[::-1]) == shared).all()
        buckets.append(shared)
    assert sum(len(b) for b in buckets) > 100

    for bucket in buckets:
        stars = _neardup.star_pieces(bucket, sources, 3)
        model = sorted({(ordinals[0], o) for ordinals in _runs_of(bucket.tolist()).values()
                        if len(ordinals) >= 3 for o in ordinals[1:]})
        assert [tuple(r) for s in stars for r in s.tolist()] == \
            sorted(model, key=lambda r: (r[1] >> 32, r))
        for p, s in enumerate(stars):
            assert (s[:, 1] >> np.uint64(32) == p).all()
    # Labels: a few documents joined to the smallest of their group.
    ordinals = sorted({o for _, o in model_rows})
    groups = [ordinals[i:i + 3] for i in range(0, len(ordinals) // 2, 7)]
    nodes = np.array(sorted(o for g in groups for o in g), dtype=np.uint64)
    root_of = {o: g[0] for g in groups for o in g}
    roots = np.array([root_of[int(o)] for o in nodes], dtype=np.uint64)
    # A bucket of min_size or more went through pass 1: its center's pairs are decided, so the
    # center is left out and the rest must be split.
    left_out = 0
    for min_size in (2, 3, 5):
        for bucket in buckets:
            mixed = _neardup.mixed_pieces(bucket, nodes, roots, sources, min_size)
            model = []
            for key, members in _runs_of(bucket.tolist()).items():
                if len(members) >= min_size:
                    members = members[1:]
                    left_out += 1
                labels = [root_of.get(o, o) for o in members]
                if len(set(labels)) > 1:
                    model += [(key, o, lab) for o, lab in zip(members, labels)]
            got = [tuple(r) for m in mixed for r in m.tolist()]
            assert sorted(got) == sorted(model)
            for p, m in enumerate(mixed):
                assert (m[:, 1] >> np.uint64(32) == p).all()
    assert left_out > 50

    # verify_stars against passes(): real sketches, each pair once.
    signer = _neardup.JobSigner("method=accurate threshold=0.8")
    texts = make_documents(300, seed=9)
    part = signer.sign_texts(texts)
    usable = np.flatnonzero((part["flags"] & _job.FLAG_EMPTY) == 0)
    members = rng.choice(usable, size=400)
    centers = rng.choice(usable, size=400)
    rows = np.stack([centers.astype(np.uint64) | np.uint64(7 << 32),
                     members.astype(np.uint64) | np.uint64(2 << 32)], axis=1)
    center_ordinals = np.unique(rows[:, 0])
    center_sketches = part["sketches"][center_ordinals & np.uint64(0xFFFFFFFF)]
    got = signer.verify_stars([rows[:250], rows[150:]], part["local"], part["sketches"],
                              center_ordinals, center_sketches)
    unique = np.unique(rows, axis=0)
    passes = signer.passes(part["sketches"][unique[:, 0] & np.uint64(0xFFFFFFFF)],
                           part["sketches"][unique[:, 1] & np.uint64(0xFFFFFFFF)])
    assert passes.any() and not passes.all()
    assert got.tolist() == unique[passes].tolist()

    # Pass 2: attach_sketches routes each row with its sketch to the target of its key, and
    # verify_buckets finds the pairs of a model that walks every bucket in ordinal order.
    ordinal_of = np.uint64(3 << 32)
    doc_rows = []
    ii, jj = np.triu_indices(len(usable), 1)
    near = np.flatnonzero(signer.passes(part["sketches"][usable[ii]], part["sketches"][usable[jj]]))
    assert len(near) > 10
    for key in range(40):
        pair = near[rng.integers(0, len(near))]
        members = np.unique(np.r_[usable[ii[pair]], usable[jj[pair]],
                                  rng.choice(usable, size=int(rng.integers(0, 7)))])
        label = rng.choice(members)  # some members of a bucket already joined
        for m in members:
            joined = rng.random() < 0.3
            doc_rows.append((key | (int(rng.integers(0, 4)) << 32), int(m) | int(ordinal_of),
                             (int(label) if joined else int(m)) | int(ordinal_of)))
    rows3 = np.array(doc_rows, dtype=np.uint64)
    attached = signer.attach_sketches([rows3[:100], rows3[100:]], part["local"],
                                      part["sketches"], targets)
    assert len(attached) == targets
    assert sorted(r for a in attached for r in map(tuple, a[0][:, :3].tolist())) == \
        sorted(doc_rows)
    for t, (r, sk) in enumerate(attached):
        assert (_targets(r[:, 0], targets) == t).all()
        # Each document's sketch once a piece, in the order of its first row.
        assert len(sk) == len(np.unique(r[:, 1]))
        assert (r[:, 3] < len(sk)).all()
        _, first = np.unique(r[:, 1], return_index=True)
        assert (np.sort(r[first, 3]) == np.arange(len(sk))).all()
        assert (sk[r[:, 3]] == part["sketches"][r[:, 1] & np.uint64(0xFFFFFFFF)]).all()
    assert sum(len(a[1]) for a in attached) < len(doc_rows)  # some documents in two buckets
    got = set()
    for t in range(targets):
        a, b = signer.verify_buckets([attached[t]])
        got |= set(zip(a.tolist(), b.tolist()))
    model = set()
    for key in sorted({r[0] for r in doc_rows}):
        bucket = sorted((o, lab) for k, o, lab in doc_rows if k == key)
        parent = list(range(len(bucket)))

        def find(x):
            while parent[x] != x:
                x = parent[x]
            return x
        for i in range(len(bucket)):
            for j in range(i):
                if bucket[i][1] == bucket[j][1]:
                    parent[find(i)] = find(j)
        for i in range(len(bucket)):
            for j in range(i + 1, len(bucket)):
                if find(i) == find(j):
                    continue
                sa = part["sketches"][bucket[i][0] & 0xFFFFFFFF]
                sb = part["sketches"][bucket[j][0] & 0xFFFFFFFF]
                if signer.passes(sa[None, :], sb[None, :])[0]:
                    parent[max(find(i), find(j))] = min(find(i), find(j))
                    model.add((bucket[i][0], bucket[j][0]))
    assert model and got == model

    # Errors.
    keys, local, usable_ = parts[1]
    with pytest.raises(ValueError, match="band_pieces"):
        _neardup.band_pieces(keys, local, usable_, 1, 0)
    with pytest.raises(ValueError, match="band_pieces"):
        _neardup.band_pieces(keys[:-1], local, usable_, 1, 2)
    with pytest.raises(ValueError, match="band_pieces"):
        _neardup.band_pieces(keys, local, usable_[:-1], 1, 2)
    with pytest.raises(ValueError, match="band_pieces"):
        _neardup.band_pieces(keys, local, usable_, 1 << 32, 2)
    with pytest.raises(ValueError, match="shared_rows"):
        _neardup.shared_rows([np.zeros((3, 3), np.uint64)])
    good = pieces[1][0]
    for bad in (good.astype(np.uint64), good[:1], good[:-1], np.append(good, np.uint32(0)),
                good.reshape(1, -1), good[::2]):
        with pytest.raises(ValueError, match="shared_rows"):
            _neardup.shared_rows([pieces[2][0], bad])
    other_bands = _neardup.band_pieces(np.ascontiguousarray(keys[:, :4]), local, usable_, 1, 2)
    with pytest.raises(ValueError, match="pieces of 5 and 4 bands"):
        _neardup.shared_rows([pieces[2][0], other_bands[0]])
    # A piece whose rows are out of document order still gives runs in ordinal order.
    shuffled = good.copy()
    count0 = int(good[2])
    rows0 = shuffled[2 + bands:2 + bands + 2 * count0].reshape(-1, 2)
    rows0[:] = rows0[::-1].copy()
    assert (_neardup.shared_rows([shuffled, pieces[2][0]]) ==
            _neardup.shared_rows([good, pieces[2][0]])).all()
    with pytest.raises(ValueError, match="local line number"):
        _neardup.band_pieces(keys, np.full(len(local), 1 << 32, np.uint64), usable_, 1, 2)
    with pytest.raises(ValueError, match="not below partitions"):
        _neardup.star_pieces(buckets[0], 1, 2)
    with pytest.raises(ValueError, match="n x 2"):
        _neardup.mixed_pieces(np.zeros((2, 3), np.uint64), nodes, roots, sources, 3)
    with pytest.raises(ValueError, match="nodes and roots"):
        _neardup.mixed_pieces(buckets[0], nodes, roots[:-1], sources, 3)
    with pytest.raises(ValueError, match="not in the tables"):
        signer.verify_stars([rows], part["local"], part["sketches"], center_ordinals[1:],
                            center_sketches[1:])
    with pytest.raises(ValueError, match="verify_stars"):
        signer.verify_stars([rows], part["local"], part["sketches"][1:], center_ordinals,
                            center_sketches)
    with pytest.raises(ValueError, match="not in the partition"):
        signer.attach_sketches([rows3 + np.array([0, 1 << 20, 0], np.uint64)], part["local"],
                               part["sketches"], targets)
    with pytest.raises(ValueError, match="attach_sketches"):
        signer.attach_sketches([rows3[:, :2]], part["local"], part["sketches"], targets)
    rows4, sketches4 = attached[0]
    for bad in ((rows4, sketches4.ravel()[:-1]), (rows4, sketches4[:-1]), (rows4[:, :3], sketches4)):
        with pytest.raises(ValueError, match="rows n x 4"):
            signer.verify_buckets([bad])
    with pytest.raises(ValueError, match="tuples"):
        signer.verify_buckets([attached[0][0]])
