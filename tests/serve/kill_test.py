#!/usr/bin/python3
"""Durability of `neardup serve`: kill -9 the server at random moments while clients stream
check-and-inserts (and it writes a snapshot every second), restart it on the same store, and check that every document whose answer was
received (acknowledged as stored) is there, that the index answers for it as before (a query by its
text finds it with similarity 1), and that nothing was stored twice.

Usage: kill_test.py PATH/TO/neardup [--kills N] [--fsync batch|always|never] [--method M]
"""
import argparse
import http.client
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time


RUNNING = []  # every server started, stopped at the end whatever happens


def start(neardup, data, method, fsync):
    """Starts a server on a free port; returns (process, port) once it answers as ready."""
    process = subprocess.Popen(
        [neardup, "serve", "--data", data, "--listen", "127.0.0.1:0", "--method", method,
         "--fsync", fsync, "--snapshot-every", "1"],  # kills while snapshots are written too
        stderr=subprocess.PIPE, text=True)
    RUNNING.append(process)
    port = None
    deadline = time.time() + 60
    while time.time() < deadline:
        line = process.stderr.readline()
        if not line:
            raise RuntimeError("the server ended before it was ready (exit %s)" % process.poll())
        match = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", line)
        if match:
            port = int(match.group(1))
        if "ready:" in line:
            # Keep reading its stderr so that it never blocks on a full pipe.
            threading.Thread(target=lambda: process.stderr.read(), daemon=True).start()
            return process, port
    raise RuntimeError("the server was not ready within 60 s")


def call(connection, method, path, body=None):
    connection.request(method, path, body=None if body is None else json.dumps(body),
                       headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    return response.status, json.loads(response.read())


def text_of(key):
    """A text of its own for every key: 40 words from a generator seeded by the key."""
    rng = random.Random(key)
    return " ".join("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(6))
                    for _ in range(40))


def stream(port, prefix, acknowledged, lock, stop):
    """Posts new documents until the connection fails; records those answered as stored."""
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        n = 0
        while not stop.is_set():
            doc_id = "%s-%d" % (prefix, n)
            status, answer = call(connection, "POST", "/v1/documents",
                                  {"id": doc_id, "text": text_of(doc_id)})
            if status != 200 or not answer.get("stored"):
                raise AssertionError("unexpected answer to %s: %s %s" % (doc_id, status, answer))
            with lock:
                acknowledged.append(doc_id)
            n += 1
    except (ConnectionError, http.client.HTTPException, OSError):
        return  # the server was killed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("neardup")
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--fsync", default="batch")
    parser.add_argument("--method", default="accurate")
    args = parser.parse_args()
    sanitized = os.environ.get("NEARDUP_SANITIZED") is not None
    rng = random.Random(2026)
    work = tempfile.mkdtemp(prefix="neardup-kill-")
    data = os.path.join(work, "store")
    acknowledged = []
    lock = threading.Lock()
    failures = 0
    previous = 0  # acknowledged before the last round
    try:
        for kill in range(args.kills):
            process, port = start(args.neardup, data, args.method, args.fsync)
            # Everything acknowledged before is there, and found by its text.
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            status, stats = call(connection, "GET", "/v1/stats")
            with lock:
                known = list(acknowledged)
            # Those of the last round (the ones a kill puts at risk), and a sample of the older.
            checked = known[previous:] + rng.sample(known[:previous], min(200, previous))
            previous = len(known)
            missing = []
            for doc_id in checked:
                status, _ = call(connection, "GET", "/v1/documents/" + doc_id)
                if status != 200:
                    missing.append(doc_id)
            for doc_id in rng.sample(known, min(20, len(known))):
                status, answer = call(connection, "POST", "/v1/query", {"text": text_of(doc_id)})
                if status != 200 or {"id": doc_id, "score": 1} not in answer["matches"]:
                    missing.append("query " + doc_id)
            if missing:
                failures += 1
                print("FAIL round %d: %d acknowledged documents missing, e.g. %s"
                      % (kill, len(missing), missing[:5]))
            if stats["documents"] < len(known):
                failures += 1
                print("FAIL round %d: %d documents stored, %d acknowledged"
                      % (kill, stats["documents"], len(known)))
            connection.close()
            # Two clients stream inserts; the server is killed at a random moment.
            stop = threading.Event()
            clients = [threading.Thread(target=stream,
                                        args=(port, "k%d-c%d" % (kill, c), acknowledged, lock, stop))
                       for c in range(2)]
            for client in clients:
                client.start()
            time.sleep(rng.uniform(0.02, 0.6 if sanitized else 0.3))
            process.send_signal(signal.SIGKILL)
            process.wait()
            stop.set()
            for client in clients:
                client.join()
        # A last start: everything is there, and a clean stop exits 0.
        process, port = start(args.neardup, data, args.method, args.fsync)
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        status, stats = call(connection, "GET", "/v1/stats")
        lost = [d for d in acknowledged
                if call(connection, "GET", "/v1/documents/" + d)[0] != 200]
        connection.close()
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)
        if lost or code != 0:
            failures += 1
            print("FAIL final: %d lost, exit code %d" % (len(lost), code))
        print("%d kills, %d documents acknowledged, %d stored, %d failures"
              % (args.kills, len(acknowledged), stats["documents"], failures))
    finally:
        for process in RUNNING:
            if process.poll() is None:
                process.kill()
                process.wait()
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
