"""python3 -m neardup.dask INPUT... --scheduler ADDRESS -o OUTDIR: dedup on a Dask cluster."""

import argparse
import os
import signal
import sys
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
    p.add_argument("--partition-mb", type=float, default=64,
                   help="input MiB a partition (default 64); compressed files are one each")
    p.add_argument("--shuffle-partitions", type=int, default=0,
                   help="partitions of the band-key shuffle (default: as many as input partitions)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on standard error")
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    # distributed's advice about large arguments in the graph (the small arrays each task is given)
    # is not the user's to act on.
    warnings.filterwarnings("ignore", message="Large object of size")
    try:
        import distributed
        from . import _job
        from .. import Error
    except ImportError as e:  # pragma: no cover - Debian's python3-distributed is missing
        print(f"neardup.dask: {e} (install python3-distributed)", file=sys.stderr)
        return 1
    if args.partition_mb <= 0:
        print("neardup.dask: --partition-mb must be positive", file=sys.stderr)
        return 2
    cluster = None
    client = None
    try:
        if args.scheduler:
            client = distributed.Client(args.scheduler, timeout=args.connect_timeout)
        else:
            workers = args.workers or os.cpu_count() or 1
            cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1,
                                               processes=True, dashboard_address=None)
            client = distributed.Client(cluster)
        report = _job.dedup_files(
            args.inputs, args.output, client=client, threshold=args.threshold, keep=args.keep,
            priority_field=args.priority_field, empty=args.empty, on_error=args.on_error,
            format=args.format, id_field=args.id_field, text_field=args.text_field,
            max_line_bytes=args.max_line_bytes,
            partition_bytes=int(args.partition_mb * (1 << 20)),
            shuffle_partitions=args.shuffle_partitions or None,
            progress=None if args.quiet else _job.main_progress)
    except KeyboardInterrupt:
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
    if not args.quiet:
        print(f"neardup.dask: {report['documents']:,} documents, {report['kept']:,} kept, "
              f"{report['duplicates']:,} duplicates in {report['clusters']:,} clusters, "
              f"{report['seconds']:.1f} s; written to {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main())
