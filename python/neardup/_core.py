"""Fingerprints, the online index and in-memory dedup (filled in by the bindings' layer)."""

__all__: list = []
