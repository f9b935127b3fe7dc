"""Shared fixtures of the Python tests: the `neardup` command to compare with, and real text.

NEARDUP_CLI names the built `neardup` binary (CTest sets it); without it the tests look for
build/py-core/cli/neardup in the source tree. Real text comes from Debian's LibreOffice help pages
(libreoffice-help-en-us, libreoffice-help-zh-cn), extracted as bench/corpus/help_text.py does: one
paragraph of a page's main text a line.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import subprocess
from typing import Callable, List, Sequence

import pytest

SOURCE_DIR = pathlib.Path(
    os.environ.get("NEARDUP_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
HELP_ROOT = pathlib.Path("/usr/share/libreoffice/help")


def _help_paragraphs(lang: str, limit: int) -> List[str]:
    """The first `limit` paragraphs of the help pages of `lang`, in sorted page order."""
    if not (HELP_ROOT / lang).is_dir():
        pytest.skip(f"{HELP_ROOT / lang} is missing: install libreoffice-help-{lang.lower()}")
    spec = importlib.util.spec_from_file_location(
        "help_text", SOURCE_DIR / "bench" / "corpus" / "help_text.py")
    if spec is None or spec.loader is None:
        pytest.skip("bench/corpus/help_text.py is missing")
    help_text = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(help_text)
    lines: List[str] = []
    for page in help_text.pages(lang):
        extractor = help_text.MainText()
        with open(page, encoding="utf-8", errors="replace") as f:
            extractor.feed(f.read())
        extractor.flush()
        lines.extend(p for p in extractor.paragraphs if p)
        if len(lines) >= limit:
            break
    return lines[:limit]


@pytest.fixture(scope="session")
def real_english_lines() -> List[str]:
    """4000 paragraphs of English help text (near-duplicates among them, as in real corpora)."""
    return _help_paragraphs("en-US", 4000)


@pytest.fixture(scope="session")
def real_chinese_lines() -> List[str]:
    """2000 paragraphs of Simplified Chinese help text."""
    return _help_paragraphs("zh-CN", 2000)


@pytest.fixture(scope="session")
def neardup_cli() -> str:
    """The path of the `neardup` command (NEARDUP_CLI, else build/py-core/cli/neardup)."""
    path = os.environ.get("NEARDUP_CLI") or str(SOURCE_DIR / "build" / "py-core" / "cli" /
                                                "neardup")
    if not os.access(path, os.X_OK):
        pytest.skip(f"no neardup command at {path} (set NEARDUP_CLI)")
    return path


@pytest.fixture(scope="session")
def run_cli(neardup_cli: str) -> Callable[..., str]:
    """run_cli(args..., input=None): the command's standard output; a failure fails the test."""

    def run(*args: str, input: bytes | None = None) -> str:
        done = subprocess.run([neardup_cli, *args], input=input, capture_output=True, check=False)
        if done.returncode != 0:
            pytest.fail(f"neardup {' '.join(args)}: exit {done.returncode}: "
                        f"{done.stderr.decode(errors='replace')}")
        return done.stdout.decode()

    return run


def write_lines(path: pathlib.Path, lines: Sequence[str]) -> pathlib.Path:
    """Writes the texts one a line (none of them may hold a line break)."""
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for line in lines:
            assert "\n" not in line and "\r" not in line
            f.write(line + "\n")
    return path
