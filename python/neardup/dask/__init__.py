"""Near-duplicate removal on a Dask distributed cluster, with the decisions of ``neardup dedup
--all-pairs --boundary-sigmas 0``.

``dedup_files(inputs, output_dir, ...)`` deduplicates files (plain text or JSONL, .gz and .zst
too) that the workers read by name; ``dedup(collection, ...)`` a Dask Bag or DataFrame. Both run
the default (accurate) method: sketches and band keys computed per partition by the extension,
a shuffle of band keys (arrays moved by Dask), verification inside each band bucket, connected
components, then the kept documents written (or returned) per partition. ``python3 -m neardup.dask INPUT...
--scheduler ADDRESS -o OUTDIR`` is the command line of ``dedup_files``.
"""

from ._job import DaskDedupResult, dedup, dedup_files

__all__ = ["DaskDedupResult", "dedup", "dedup_files"]
