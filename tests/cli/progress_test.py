#!/usr/bin/python3
"""The progress bar of `neardup dedup` moves: run under a pseudo-terminal, its frames are read back.

Usage: progress_test.py PATH/TO/neardup
A corpus (8 MB of distinct documents repeated to 192 MB; 24 MB under the sanitizers) is deduplicated
with standard error on a pseudo-terminal. The frames (redrawn after '\r') must show several
percentages between 0 and 100 while the documents are read, and must come at least every 200 ms
(with slack for a loaded machine).
"""
import os
import pty
import random
import re
import select
import sys
import tempfile
import time


def main():
    neardup = sys.argv[1]
    sanitized = "NEARDUP_SANITIZED" in os.environ
    # A second or more of reading either way (signing runs at over 100 MB/s on 2 cores).
    megabytes = 24 if sanitized else 192
    with tempfile.TemporaryDirectory() as folder:
        corpus = os.path.join(folder, "corpus.txt")
        rng = random.Random(11)
        words = ["w%05d" % i for i in range(90000)]
        # 8 MB of distinct lines, repeated: every copy is read and signed all the same.
        block = "".join(" ".join(rng.choice(words) for _ in range(40)) + "\n"
                        for _ in range((8 << 20) // 280))
        with open(corpus, "w") as out:
            for _ in range(max(1, (megabytes << 20) // len(block))):
                out.write(block)
        pid, master = pty.fork()
        if pid == 0:  # the child: stderr (and stdout) is the pseudo-terminal
            os.execv(neardup, [neardup, "dedup", corpus, "-o", os.path.join(folder, "kept.txt")])
        frames = []  # (time, text) of each redraw
        pending = b""
        while True:
            ready, _, _ = select.select([master], [], [], 60)
            if not ready:
                print("FAIL: no output for 60 s")
                return 1
            try:
                data = os.read(master, 65536)
            except OSError:
                data = b""
            if not data:
                break
            now = time.monotonic()
            pending += data
            *done, pending = pending.split(b"\r")
            frames.extend((now, frame.decode("utf-8", "replace")) for frame in done if frame.strip())
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            print("FAIL: neardup dedup exited with", os.waitstatus_to_exitcode(status))
            return 1
    reading = [(t, f) for t, f in frames if f.startswith("fingerprint [")]
    percents = sorted({int(m.group(1)) for _, f in reading for m in [re.search(r"\]\s+(\d+)%", f)] if m})
    middle = [p for p in percents if 0 < p < 100]
    gaps = [b[0] - a[0] for a, b in zip(frames, frames[1:])]
    print("frames: %d, while reading: %d, percentages: %s, longest gap: %.3f s"
          % (len(frames), len(reading), percents, max(gaps, default=0)))
    failures = 0
    if len(middle) < 3:
        print("FAIL: the bar showed %d percentages between 0 and 100, expected 3 or more" % len(middle))
        failures += 1
    # 200 ms is the contract; a loaded test machine may delay a redraw, never by seconds.
    if max(gaps, default=0) > 1.0:
        print("FAIL: %.3f s between two frames" % max(gaps))
        failures += 1
    print("progress_test: %d passed, %d failed" % (2 - failures, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
