"""python3 -m neardup.dask INPUT... --scheduler ADDRESS -o OUTDIR: dedup on a Dask cluster."""

import _thread
import argparse
import logging
import math
import os
import signal
import sys
import threading
import warnings

EXAMPLES = """examples:
  python3 -m distributed.cli.dask_scheduler --port 8786 &
  python3 -m distributed.cli.dask_worker tcp://127.0.0.1:8786 --nworkers 2 --nthreads 1 &
  python3 -m neardup.dask crawl/ --scheduler tcp://127.0.0.1:8786 -o deduped/
  python3 -m neardup.dask a.jsonl b.jsonl.gz -o deduped/          (a local cluster, one worker a core)
  cat deduped/kept/part-* > kept.jsonl   # the file `neardup dedup a.jsonl b.jsonl.gz -o` writes

outputs (in OUTDIR, which must not exist or be empty; written beside it, renamed when done):
  kept/part-NNNNN.jsonl  the kept lines of each partition, byte for byte, in input order
                         (.txt for plain-text inputs)
  dups.tsv               dup_id<TAB>kept_id<TAB>score, as `neardup dedup --dups`
  clusters.jsonl         {"representative":ID,"size":N,"members":[...]}, as `--clusters`
  report.json            counts, settings and the time of each stage
"""

# Dask starts its worker processes with MALLOC_TRIM_THRESHOLD_=65536
# (distributed.nanny.pre-spawn-environ). Setting it also stops glibc from raising its mmap
# threshold above 128 KiB, so every array a task makes comes as fresh pages from the kernel, zeroed
# again. Measured at 1M documents on 2 workers: 1.02M page faults and 7.0 s against 0.68M and 6.3 s
# with these settings, which keep up to 256 MiB of free memory a worker. A variable set by the user
# wins.
WORKER_MALLOC = {"MALLOC_TRIM_THRESHOLD_": str(256 << 20), "MALLOC_MMAP_THRESHOLD_": str(32 << 20)}


def _start_forkserver() -> None:
    """Starts the process the local cluster's workers are forked from, before this one imports
    distributed: it imports distributed and the job on the other core meanwhile, and each worker
    then starts without importing them again. A job on 1,000 lines took 1.05 s against 1.45 s
    with workers spawned (Dask's default); the 1M-document job saves as much. A method the user
    chose in Dask's configuration is kept."""
    import multiprocessing
    import multiprocessing.forkserver
    try:
        import dask
    except ImportError:  # main() says what to install
        return
    if (dask.config.get("distributed.worker.multiprocessing-method", default="spawn") != "spawn"
            or "forkserver" not in multiprocessing.get_all_start_methods()):
        return
    # The workers inherit the server's environment, and glibc reads it when the server starts.
    for name, value in WORKER_MALLOC.items():
        os.environ.setdefault(name, value)
    multiprocessing.get_context("forkserver").set_forkserver_preload(
        ["distributed", "neardup.dask._job", "neardup.dask._local_worker"])
    # Started ignoring Ctrl-C (an ignored signal stays so across exec), so that an interrupt while
    # it imports does not kill it with a fatal error.
    handler = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        signal.signal(signal.SIGINT, handler)
    dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"})


def _local_cluster(workers: int):
    import dask
    import distributed
    environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ", default={}) or {})
    environ.update({k: v for k, v in WORKER_MALLOC.items() if k not in os.environ})
    with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}):
        # No dashboard; the scheduler's HTTP server (health, metrics) on a free port, not on
        # 8787 with a warning when another cluster has it.
        return distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                        dashboard_address=None,
                                        scheduler_kwargs={"dashboard_address": ":0"})


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python3 -m neardup.dask",
        description="Near-duplicate removal of files on a Dask distributed cluster, with the "
        "decisions of `neardup dedup` (default method: character 5-gram sketches, LSH bands).",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="files or folders (read by the workers by name: a shared file system)")
    p.add_argument("-o", "--output", required=True, metavar="OUTDIR", help="the output folder")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="the Dask scheduler (tcp://HOST:PORT); default: a local cluster of one "
                   "worker process a core")
    p.add_argument("--connect-timeout", type=float, default=30, metavar="SECONDS",
                   help="how long to wait for the scheduler (default 30)")
    p.add_argument("--workers", type=int, default=0,
                   help="worker processes of the local cluster (default: one a core)")
    p.add_argument("--threshold", type=float, default=0.8,
                   help="estimated Jaccard similarity of near-duplicates (default 0.8)")
    p.add_argument("--keep", default="first", choices=["first", "last", "longest", "shortest"],
                   help="which document of a cluster is kept (default first)")
    p.add_argument("--priority-field", default="",
                   help="keep the document with the highest value of this JSONL number field "
                   "(not with --keep)")
    p.add_argument("--empty", default="keep", choices=["keep", "drop", "fail"],
                   help="documents without features (blank, symbols only): default keep")
    p.add_argument("--on-error", default="fail", choices=["fail", "skip"],
                   help="bad documents: fail at the first (default) or leave them out")
    p.add_argument("--format", default="auto", choices=["auto", "plain", "jsonl"],
                   help="auto: .jsonl and .ndjson names are JSONL, others plain text")
    p.add_argument("--id-field", default="id", help="JSONL id field (default id)")
    p.add_argument("--text-field", default="text", help="JSONL text field (default text)")
    p.add_argument("--max-line-bytes", type=int, default=64 << 20,
                   help="longer lines are bad documents (default 64 MiB)")
    p.add_argument("--partition-mb", type=float, default=None,
                   help="input MiB a partition (default 64, or less to give each worker thread "
                   "4 partitions, down to 4); compressed files are one each")
    p.add_argument("--shuffle-partitions", type=int, default=0,
                   help="partitions of the band-key shuffle (default: as many as input partitions)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on standard error")
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    # distributed's advice about large arguments in the graph (the small arrays each task is given)
    # is not the user's to act on.
    warnings.filterwarnings("ignore", message="Large object of size")
    # Numbers the job cannot take: exit 2 before any cluster starts.
    for flag, value, good, what in (
            ("--partition-mb", args.partition_mb, args.partition_mb is None or
             0 < args.partition_mb < math.inf, "a positive number"),
            ("--connect-timeout", args.connect_timeout, 0 < args.connect_timeout < math.inf,
             "a positive number"),
            ("--workers", args.workers, args.workers >= 0, "0 (one a core) or more"),
            ("--shuffle-partitions", args.shuffle_partitions, args.shuffle_partitions >= 0,
             "0 (as many as input partitions) or more")):
        if not good:
            print(f"neardup.dask: {flag} must be {what}; got {value}", file=sys.stderr)
            return 2
    if not args.scheduler:
        _start_forkserver()
    try:
        import distributed
        from . import _job
        from .. import Error
    except ImportError as e:  # pragma: no cover - Debian's python3-distributed is missing
        print(f"neardup.dask: {e} (install python3-distributed)", file=sys.stderr)
        return 1
    # Ctrl-C raises KeyboardInterrupt wherever the main thread is, and Python drops it (printing a
    # traceback) when that is a garbage collector's callback: the local scheduler, in this process,
    # installs one. A dropped interrupt is raised again at once, outside the callback, and the end
    # of each stage checks that none was lost.
    interrupted = threading.Event()

    def on_interrupt(signum, frame):
        interrupted.set()
        raise KeyboardInterrupt

    def on_unraisable(unraisable) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt) and interrupted.is_set():
            # From another thread, once this hook has returned (raised in it, it would be dropped
            # again).
            again = threading.Timer(0.01, _thread.interrupt_main, args=(signal.SIGINT,))
            again.daemon = True
            again.start()
            return
        previous_unraisable(unraisable)

    def progress(message: str) -> None:
        if interrupted.is_set():
            raise KeyboardInterrupt
        if not args.quiet:
            _job.main_progress(message)

    previous_handler = signal.signal(signal.SIGINT, on_interrupt)
    previous_unraisable = sys.unraisablehook
    sys.unraisablehook = on_unraisable
    cluster = None
    client = None
    try:
        if args.scheduler:
            client = distributed.Client(args.scheduler, timeout=args.connect_timeout)
        else:
            workers = args.workers or os.cpu_count() or 1
            # Ctrl-C waits until the cluster is up and can be stopped: a cluster interrupted as it
            # starts cannot be closed, and its workers restart as the command exits.
            mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            try:
                cluster = _local_cluster(workers)
                client = distributed.Client(cluster)
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        report = _job.dedup_files(
            args.inputs, args.output, client=client, threshold=args.threshold, keep=args.keep,
            priority_field=args.priority_field, empty=args.empty, on_error=args.on_error,
            format=args.format, id_field=args.id_field, text_field=args.text_field,
            max_line_bytes=args.max_line_bytes,
            partition_bytes=None if args.partition_mb is None else int(args.partition_mb * (1 << 20)),
            shuffle_partitions=args.shuffle_partitions or None,
            progress=progress)
    except KeyboardInterrupt:
        # The client's pending gathers end as the cluster stops: not the user's news.
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
        print("neardup.dask: interrupted", file=sys.stderr)
        return 130
    except (Error, OSError, TypeError, ValueError, TimeoutError) as e:
        print(f"neardup.dask: error: {e}", file=sys.stderr)
        return 1
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
        signal.signal(signal.SIGINT, previous_handler)
        sys.unraisablehook = previous_unraisable
    if not args.quiet:
        print(f"neardup.dask: {report['documents']:,} documents, {report['kept']:,} kept, "
              f"{report['duplicates']:,} duplicates in {report['clusters']:,} clusters, "
              f"{report['seconds']:.1f} s; written to {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # before main() handles it (while Dask is imported)
        print("neardup.dask: interrupted", file=sys.stderr)
        sys.exit(130)
