"""Near-duplicate removal on a Dask distributed cluster, with the decisions of ``neardup dedup
--all-pairs --boundary-sigmas 0``.

``dedup_files(inputs, output_dir, ...)`` deduplicates files (plain text or JSONL, .gz and .zst
too) that the workers read by name; ``dedup(collection, ...)`` a Dask Bag or DataFrame. Both run
the default (accurate) method: sketches and band keys computed per partition by the extension,
a shuffle of band keys (arrays moved by Dask), verification inside each band bucket, connected
components, then the kept documents written (or returned) per partition. ``python3 -m neardup.dask INPUT...
--scheduler ADDRESS -o OUTDIR`` is the command line of ``dedup_files``.
"""

__all__ = ["DaskDedupResult", "dedup", "dedup_files"]


def __getattr__(name):
    # The job (and Dask) are imported on first use, so that ``python3 -m neardup.dask`` can say what
    # to install when Dask is missing, and Ctrl-C during the import is the command's to handle.
    if name in __all__:
        try:
            from . import _job
        except ImportError as e:
            raise ImportError(f"neardup.dask needs Dask distributed ({e}): install "
                              "python3-distributed, or pip install 'dask[distributed]'") from e
        return getattr(_job, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
