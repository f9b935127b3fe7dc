"""jieba's API (jieba 0.42.1) over neardup's segmenter: ``import neardup as jieba`` and the calls
give the same words.

- ``cut(sentence, cut_all=False, HMM=True)``: ``jieba.lcut``'s words. It returns a list (jieba's
  ``cut`` returns a generator; iterating the list yields the same words), so ``lcut`` is the
  same function.
- ``cut_for_search`` / ``lcut_for_search``, ``tokenize``: likewise.
- ``load_userdict(f)``, ``add_word``, ``del_word``, ``suggest_freq``, ``get_FREQ``: the same
  dictionary changes, applied in the same order with the same arithmetic.
- ``Tokenizer(dictionary=None)``, ``dt`` (the default one), ``initialize``, ``set_dictionary``.
- ``extract_tags``: ``neardup.analyse.extract_tags`` (jieba.analyse's TF-IDF keywords).

Text arguments are str, or bytes decoded as jieba decodes them (UTF-8, else GBK ignoring what
is not). Anything else raises TypeError naming the argument. A str holding lone surrogates is cut
as jieba cuts it (each one a word of its own). Dictionary loading is lazy, as in jieba: the first
call loads jieba's dictionary (from neardup's cache file after the first time, in milliseconds).

Differences from jieba, by design:

- missing files raise ``neardup.NotFoundError`` (a FileNotFoundError) naming the path, where jieba
  raises a bare Exception; a malformed dictionary line raises ``neardup.InvalidArgumentError`` (a
  ValueError) naming the file and line. A failed ``load_userdict`` changes nothing (jieba keeps
  the lines before the bad one).
- ``add_word`` (and ``del_word``, ``suggest_freq(..., tune=True)``) refuses (ValueError) the words
  a user dictionary line cannot hold (empty, holding a line break, holding a lone surrogate, which
  UTF-8 cannot hold: jieba takes it, but never cuts it out as a dictionary word) and negative
  frequencies, which break jieba's arithmetic; ``load_userdict`` refuses such lines of a file
  object (``neardup.InvalidArgumentError``, naming the line). Changes are applied by
  rebuilding the dictionary at the next call (a few tenths of a second, once for any number of
  changes): make them before cutting, not between cuts. ``del_word`` (a frequency of 0) forces
  the split of the word by the HMM of that Tokenizer only (jieba's force-split list is shared by
  all of them).
- no paddle mode (``use_paddle`` is accepted and ignored, as by jieba without paddlepaddle), no
  ``enable_parallel`` (cut with threads instead: long texts are cut without the GIL), no
  ``jieba.posseg``; the tags of user words (``add_word``'s, and those of ``load_userdict``'s
  lines) are kept in ``user_word_tag_tab`` (``neardup.user_word_tag_tab``: ``dt``'s, as jieba's)
  but used by nothing.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
import threading
import weakref
from typing import (IO, Dict, Iterable, List, Optional, Sequence, Tuple, TypeVar, Union, cast,
                    overload)

from . import _neardup

__all__ = [
    "Tokenizer",
    "dt",
    "cut",
    "lcut",
    "cut_for_search",
    "lcut_for_search",
    "tokenize",
    "load_userdict",
    "add_word",
    "del_word",
    "suggest_freq",
    "get_FREQ",
    "initialize",
    "set_dictionary",
    "setLogLevel",
    "user_word_tag_tab",
    "extract_tags",
]

PathLike = Union[str, "os.PathLike[str]"]
Text = Union[str, bytes, bytearray]
_T = TypeVar("_T")

# jieba's user dictionary line: the shortest word after which the rest is [" freq"][" tag"].
_RE_USERDICT = re.compile("^(.+?)( [0-9]+)?( [a-z]+)?$", re.U)
# What the C++ loader strips from each line of a dictionary file (bytes.strip()'s white space).
_ASCII_SPACE = " \t\n\r\x0b\x0c"
# The largest frequency the C++ loader takes.
_MAX_FREQUENCY = 1 << 53

logger = logging.getLogger("neardup.jieba")


def setLogLevel(log_level: Union[int, str]) -> None:  # noqa: N802 (jieba's name)
    """jieba.setLogLevel: the level of the "neardup.jieba" logger (neardup logs nothing here)."""
    logger.setLevel(log_level)


def _abs_path(path: PathLike) -> str:
    """jieba's _get_abs_path: the path made absolute against the current directory."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError("path must be str or os.PathLike, not " + type(path).__name__)
    return os.path.normpath(os.path.join(os.getcwd(), os.fspath(path)))


def _existing_file(path: PathLike, what: str) -> str:
    absolute = _abs_path(path)
    if not os.path.isfile(absolute):
        raise _neardup.NotFoundError("%s does not exist: %s" % (what, absolute))
    return absolute


def _strdecode(sentence: object, what: str = "sentence") -> str:
    """jieba's strdecode, with a TypeError naming the argument for what is not text."""
    if isinstance(sentence, str):
        return sentence
    if isinstance(sentence, (bytes, bytearray)):
        try:
            return sentence.decode("utf-8")
        except UnicodeDecodeError:
            return sentence.decode("gbk", "ignore")
    raise TypeError("%s must be str or bytes, not %s" % (what, type(sentence).__name__))


def _lone_surrogate(text: str) -> Optional[int]:
    """The index of the first lone surrogate of `text` (which UTF-8 cannot hold), else None."""
    try:
        text.encode("utf-8")
        return None
    except UnicodeEncodeError as error:
        return error.start


def _check_dictionary_text(text: str, where: str) -> None:
    """InvalidArgumentError (a ValueError) for a dictionary word or line holding a lone surrogate:
    the dictionary is UTF-8, which cannot hold one (jieba would take it, but no cut can ever yield
    such a word as a dictionary word: the surrogate is a character of no word)."""
    at = _lone_surrogate(text)
    if at is not None:
        raise _neardup.InvalidArgumentError(
            "%s: %r holds a lone surrogate (U+%04X at character %d), which a dictionary cannot "
            "hold (it is UTF-8)" % (where, text[:80], ord(text[at]), at))


def _userdict_line(word: str, freq: Optional[int]) -> Optional[str]:
    """The user dictionary line that adds `word` with `freq` (None: jieba's suggested frequency)
    exactly as add_word does, or None when no line can say that (see _Lines)."""
    line = word if freq is None else "%s %d" % (word, freq)
    if "\n" in line or line.rstrip(_ASCII_SPACE) != line:
        return None
    match = _RE_USERDICT.match(line)
    if match is None or match.group(1) != word:
        return None
    parsed = match.group(2)
    if (None if parsed is None else int(parsed)) != freq:
        return None
    return line


def _userdict_lines(f: Iterable[Union[str, bytes]], name: str) -> List[str]:
    """The lines of a user dictionary file object as jieba's load_userdict reads them."""
    lines = []
    for number, ln in enumerate(f, 1):
        line = ln.strip()
        if not isinstance(line, str):
            try:
                line = line.decode("utf-8").lstrip("\ufeff")
            except UnicodeDecodeError:
                raise _neardup.InvalidArgumentError(
                    "dictionary file %s must be utf-8" % name) from None
        if "\n" in line:  # an iterable of lines that are not lines (jieba fails on them too)
            raise _neardup.InvalidArgumentError(
                "%s:%d: a line break inside a line: %r" % (name, number, line[:80]))
        _check_dictionary_text(line, "%s:%d" % (name, number))
        if line:
            lines.append(line)
    return lines


class _Lines:
    """User dictionary lines held in memory (a file object's, or add_word's), each as jieba's
    load_userdict matches it against its pattern. They reach the C++ loader through a file, each
    line behind a U+FEFF: the loader strips a line's ASCII white space, then one U+FEFF, then
    matches the same pattern, so the line it matches is the one held (even one that starts with
    white space or U+FEFF, as jieba's can)."""

    def __init__(self, name: str, lines: List[str]) -> None:
        self.name = name
        self.lines = lines


_Source = Union[str, _Lines]  # a user dictionary: its absolute path, or lines


class Tokenizer:
    """jieba.Tokenizer: a dictionary and the cuts made with it.

    ``dictionary``: the main dictionary ("word freq [tag]" per line), default jieba's dict.txt.
    The dictionary is loaded at the first call that needs it (or by ``initialize()``); the
    instance is thread-safe.
    """

    def __init__(self, dictionary: Optional[PathLike] = None) -> None:
        self.lock = threading.RLock()
        self.dictionary: Optional[str] = (
            None if dictionary is None else _existing_file(dictionary, "dictionary file"))
        self.user_word_tag_tab: Dict[str, str] = {}
        self._sources: List[_Source] = []  # user dictionaries and added words, in order
        self._core: Optional[_neardup.Tokenizer] = None  # None: to load
        # cut and cut_for_search in C++ (the methods below do the same in Python): instance
        # attributes, found before the class's methods.
        self._cutter = _neardup.Cutter(weakref.WeakMethod(self._loaded), _strdecode)
        self.__dict__.update(cut=self._cutter.cut, lcut=self._cutter.cut,
                             cut_for_search=self._cutter.cut_for_search,
                             lcut_for_search=self._cutter.cut_for_search)

    def __repr__(self) -> str:
        return "<Tokenizer dictionary=%r>" % self.dictionary

    # Loading.

    @property
    def initialized(self) -> bool:
        """Whether the dictionary, with every change made to it, is loaded."""
        return self._core is not None

    def initialize(self, dictionary: Optional[PathLike] = None) -> None:
        """Loads the dictionary now; with a path, first switches to that main dictionary (which
        drops user words, as in jieba)."""
        with self.lock:
            if dictionary:
                path = _existing_file(dictionary, "dictionary file")
                if path != self.dictionary:
                    self.dictionary = path
                    self._sources = []
                    self._set_core(None)
            self._loaded()

    def set_dictionary(self, dictionary_path: PathLike) -> None:
        """Switches to another main dictionary, loaded at the next call; user words are dropped,
        as in jieba. NotFoundError when the file does not exist."""
        path = _existing_file(dictionary_path, "dictionary file")
        with self.lock:
            self.dictionary = path
            self._sources = []
            self._set_core(None)

    def _set_core(self, core: Optional[_neardup.Tokenizer]) -> None:
        """Cuts with `core` from now on (None: the dictionary changed, to load again)."""
        self._core = core
        self._cutter.tokenizer = core

    def _loaded(self) -> _neardup.Tokenizer:
        """The loaded dictionary, loading it first if need be."""
        core = self._core
        if core is None:
            with self.lock:
                core = self._core
                if core is None:
                    core = self._build(self._sources)
                    self._set_core(core)
        return core

    def _build(self, sources: Sequence[_Source]) -> _neardup.Tokenizer:
        """Loads the main dictionary with `sources` applied in order."""
        if not any(isinstance(source, _Lines) for source in sources):
            return _neardup.Tokenizer(self.dictionary, [str(s) for s in sources])
        # Lines in memory go through files of a temporary directory, read without the cache:
        # their names change at every load.
        names: Dict[str, str] = {}
        with tempfile.TemporaryDirectory(prefix="neardup-userdict-") as directory:
            paths = []
            for number, source in enumerate(sources):
                if isinstance(source, _Lines):
                    path = os.path.join(directory, "%d.txt" % number)
                    with open(path, "w", encoding="utf-8", errors="surrogatepass",
                              newline="\n") as f:
                        f.write("\n".join("\ufeff" + line for line in source.lines))
                    names[path] = source.name
                    paths.append(path)
                else:
                    paths.append(source)
            try:
                return _neardup.Tokenizer(self.dictionary, paths, use_cache=False)
            except _neardup.Error as error:
                message = str(error)
                for path, name in names.items():
                    message = message.replace(path, name)
                raise type(error)(message) from None

    # Cutting.

    def cut(self, sentence: Text, cut_all: bool = False, HMM: bool = True,  # noqa: N803
            use_paddle: bool = False) -> List[str]:
        """jieba.lcut: the words of `sentence` (cut_all: every dictionary word; HMM: unknown words
        found by the hidden Markov model). `use_paddle` is ignored, as by jieba without paddle."""
        core = self._core
        if core is None:
            core = self._loaded()
        if sentence.__class__ is not str:
            sentence = _strdecode(sentence)
        return core.cut(sentence, cut_all, HMM)

    lcut = cut

    def cut_for_search(self, sentence: Text, HMM: bool = True) -> List[str]:  # noqa: N803
        """jieba.lcut_for_search: the words of cut(), each long one preceded by its 2- and 3-grams
        that are dictionary words."""
        core = self._core
        if core is None:
            core = self._loaded()
        if sentence.__class__ is not str:
            sentence = _strdecode(sentence)
        return core.cut_for_search(sentence, HMM)

    lcut_for_search = cut_for_search

    def tokenize(self, unicode_sentence: str, mode: str = "default",
                 HMM: bool = True) -> List[Tuple[str, int, int]]:  # noqa: N803
        """jieba.tokenize: (word, start, end) of each word, end exclusive, in characters; mode
        "search" adds the 2- and 3-grams as cut_for_search does. A list (jieba: a generator)."""
        if not isinstance(unicode_sentence, str):
            raise TypeError(
                "unicode_sentence must be str, not " + type(unicode_sentence).__name__)
        core = self._loaded()
        tokens = []
        start = 0
        if mode == "default":
            for w in core.cut(unicode_sentence, False, HMM):
                width = len(w)
                tokens.append((w, start, start + width))
                start += width
            return tokens
        frequency = core.frequency
        for w in core.cut(unicode_sentence, False, HMM):
            width = len(w)
            if width > 2:
                for i in range(width - 1):
                    gram2 = w[i:i + 2]
                    if frequency(gram2):
                        tokens.append((gram2, start + i, start + i + 2))
            if width > 3:
                for i in range(width - 2):
                    gram3 = w[i:i + 3]
                    if frequency(gram3):
                        tokens.append((gram3, start + i, start + i + 3))
            tokens.append((w, start, start + width))
            start += width
        return tokens

    # The dictionary.

    @property
    def total(self) -> int:
        """jieba's Tokenizer.total: the sum of all frequencies."""
        return self._loaded().total

    @overload
    def get_FREQ(self, k: str) -> Optional[int]: ...  # noqa: N802

    @overload
    def get_FREQ(self, k: str, d: _T) -> Union[int, _T]: ...  # noqa: N802

    def get_FREQ(self, k: str, d: object = None) -> object:  # noqa: N802 (jieba's name)
        """jieba's FREQ.get(k, d): a word's frequency, 0 for a prefix of one or a deleted word,
        `d` for anything else (as for jieba, any key that is not a str: None, bytes...; an
        unhashable one raises TypeError, as dict.get does)."""
        if not isinstance(k, str):
            hash(k)
            return d
        frequency = self._loaded().frequency(k)
        return d if frequency is None else frequency

    def load_userdict(self, f: Union[PathLike, IO[str], IO[bytes]]) -> None:
        """jieba.load_userdict: "word [freq] [tag]" per line, from a path or a file object (bytes
        lines are UTF-8); each line is add_word(word, freq, tag). NotFoundError for a missing file,
        InvalidArgumentError (a ValueError) for invalid UTF-8 or a frequency too large."""
        source: _Source
        if isinstance(f, (str, os.PathLike)):
            source = _existing_file(f, "user dictionary")
        elif hasattr(f, "__iter__"):
            name = str(getattr(f, "name", repr(f)))
            source = _Lines(name, _userdict_lines(cast(Iterable[Union[str, bytes]], f), name))
        else:
            raise TypeError("f must be a path or a file object, not " + type(f).__name__)
        with self.lock:
            sources = self._sources + [source]
            core = self._build(sources)  # now: errors are raised by this call, as by jieba's
            if isinstance(source, _Lines):
                lines = source.lines
            else:
                with open(source, "rb") as file:  # read as jieba reads it (the build checked it)
                    lines = _userdict_lines(file, source)
            self._sources = sources
            self._set_core(core)
            # jieba's add_word(word, freq, tag) of each line: the tags of the lines that have one.
            for line in lines:
                match = _RE_USERDICT.match(line)
                if match is not None and match.group(3):
                    self.user_word_tag_tab[match.group(1)] = match.group(3).strip()

    def add_word(self, word: Text, freq: Union[int, str, None] = None,
                 tag: Optional[str] = None) -> None:
        """jieba.add_word: sets the word's frequency (default: suggest_freq(word)), adding the
        frequency to the total as jieba does. Takes effect at the next call (the dictionary is
        rebuilt then, once for any number of changes)."""
        word = _strdecode(word, "word")
        _check_dictionary_text(word, "add_word")
        frequency = None if freq is None else int(freq)
        if frequency is not None and not 0 <= frequency <= _MAX_FREQUENCY:
            raise ValueError("add_word: frequency %d out of range [0, 2**53]" % frequency)
        with self.lock:
            line = _userdict_line(word, frequency)
            if line is None and frequency is None:
                # The line would read differently: give the suggested frequency explicitly.
                frequency = self.suggest_freq(word)
                line = _userdict_line(word, frequency)
            if line is None:
                raise ValueError(
                    "add_word: %r cannot be added (a word must not be empty or hold a line break)"
                    % word)
            if tag:
                self.user_word_tag_tab[word] = tag
            last = self._sources[-1] if self._sources else None
            if isinstance(last, _Lines) and last.name == "add_word":
                last.lines.append(line)
            else:
                self._sources.append(_Lines("add_word", [line]))
            self._set_core(None)

    def del_word(self, word: Text) -> None:
        """jieba.del_word: add_word(word, 0) (the word is no longer cut out)."""
        self.add_word(word, 0)

    def suggest_freq(self, segment: Union[str, Iterable[Text]], tune: bool = False) -> int:
        """jieba.suggest_freq: the frequency that makes a str cut as one word, or a sequence of
        pieces cut apart; with tune, add_word(word, that frequency)."""
        with self.lock:
            core = self._loaded()
            total = core.total
            ftotal = float(total)
            freq: float = 1
            if isinstance(segment, str):
                word = segment
                for seg in core.cut(word, False, False):
                    found = core.frequency(seg)
                    freq *= (1 if found is None else found) / ftotal
                found = core.frequency(word)
                result = max(int(freq * total) + 1, 1 if found is None else found)
            else:
                pieces = tuple(_strdecode(piece, "segment") for piece in segment)
                word = "".join(pieces)
                for seg in pieces:
                    found = core.frequency(seg)
                    freq *= (1 if found is None else found) / ftotal
                found = core.frequency(word)
                result = min(int(freq * total), 0 if found is None else found)
            if tune:
                self.add_word(word, result)
            return result


# The default Tokenizer, and jieba's module-level functions bound to it.
dt = Tokenizer()

cut = dt.cut
lcut = dt.lcut
cut_for_search = dt.cut_for_search
lcut_for_search = dt.lcut_for_search
tokenize = dt.tokenize
load_userdict = dt.load_userdict
add_word = dt.add_word
del_word = dt.del_word
suggest_freq = dt.suggest_freq
get_FREQ = dt.get_FREQ
initialize = dt.initialize
set_dictionary = dt.set_dictionary
user_word_tag_tab = dt.user_word_tag_tab

# Re-exported at the end: analyse uses dt.
from .analyse import extract_tags  # noqa: E402
