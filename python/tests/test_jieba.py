"""neardup's jieba drop-in against Python's jieba 0.42.1 (Debian's python3-jieba).

Real Chinese text comes from the LibreOffice help pages (libreoffice-help-zh-cn), taken as
tests/jieba/oracle.py takes it; synthetic text (oracle.py's tricky lines, English, digits, white
space) covers the rest. Words must be the same lists, keywords the same words with equal floats.
"""

import importlib.util
import io
import os
import pathlib
import random
import threading
import time

import pytest

import neardup
from neardup import _neardup, analyse

jieba = pytest.importorskip("jieba")
import jieba.analyse  # noqa: E402
import jieba.finalseg  # noqa: E402

jieba.setLogLevel(60)

SOURCE_DIR = pathlib.Path(
    os.environ.get("NEARDUP_SOURCE_DIR") or pathlib.Path(__file__).resolve().parents[2])
USER_DICT = SOURCE_DIR / "tests" / "jieba" / "userdict.txt"
JIEBA_DIR = pathlib.Path(jieba.__file__).parent

EXTRA_LINES = [
    "", " ", "   ", "\t", "\r\n", "\n\n", "\u3000", "hello world",
    "Hello, World! It's 2024-06-01 12:30.", "3.14159 + 2.71828 = 5.85987", "-42 +7 1e10 0x1F",
    "C++ and C# are languages; so is F#.", "a\u3000b\xa0c\u2028d", "１２３ＡＢＣ全角字符",
    "email: foo.bar@example.com, url: https://example.com/a_b?c=d&e=f",
    "价格是100元，折扣8.5%，共计85.00元。", "mixed中English文字123数字", "\U0001F600表情符号😀",
    "line1\nline2\r\nline3\rline4", " leading and trailing ", "长江大桥南京市长江大桥",
    "他说的确实在理", "结婚的和尚未结婚的", "工信处女干事每月经过下属科室都要亲口交代24口交换机等技术性器件的安装工作",
    "我们中出了一个叛徒", "小明硕士毕业于中国科学院计算所，后在日本京都大学深造",
    "Pneumonoultramicroscopicsilicovolcanoconiosis", "12345678901234567890123456789012345",
    "中华人民共和国中央人民政府国务院总理", "AT&T的T恤和B超", "😀😀😀😀😀😀😀😀测试测试",
]

MODES = {
    "default": (lambda s: jieba.lcut(s), lambda s: neardup.cut(s)),
    "no_hmm": (lambda s: jieba.lcut(s, HMM=False), lambda s: neardup.cut(s, HMM=False)),
    "cut_all": (lambda s: jieba.lcut(s, cut_all=True), lambda s: neardup.cut(s, cut_all=True)),
    "search": (lambda s: jieba.lcut_for_search(s), lambda s: neardup.cut_for_search(s)),
    "search_no_hmm": (lambda s: jieba.lcut_for_search(s, HMM=False),
                      lambda s: neardup.cut_for_search(s, HMM=False)),
}


def load_oracle():
    spec = importlib.util.spec_from_file_location(
        "jieba_oracle", SOURCE_DIR / "tests" / "jieba" / "oracle.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


oracle = load_oracle()


@pytest.fixture(scope="module")
def lines():
    if not os.path.isdir(os.path.join(oracle.HELP_DIR, "text")):
        pytest.skip("no Chinese text: install libreoffice-help-zh-cn")
    # (The CLI's oracle tests, tests/jieba, compare larger volumes; these check the binding.)
    found = oracle.corpus_lines(3000)
    assert len(found) == 3000
    return found


@pytest.fixture(scope="module")
def docs():
    if not os.path.isdir(os.path.join(oracle.HELP_DIR, "text")):
        pytest.skip("no Chinese text: install libreoffice-help-zh-cn")
    return [text for _, text in oracle.corpus_docs(150)]


@pytest.fixture(scope="module")
def synthetic():
    return oracle.synthetic_lines(2000) + EXTRA_LINES


@pytest.fixture
def force_split_restored():
    """jieba's del_word and user words of frequency 0 change a list all its Tokenizers share."""
    saved = set(jieba.finalseg.Force_Split_Words)
    yield
    jieba.finalseg.Force_Split_Words.clear()
    jieba.finalseg.Force_Split_Words.update(saved)


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    """neardup's cache files of dictionaries and IDF tables in temporary files (named by their
    paths, new at every run) go to a temporary directory, not to the shared cache."""
    monkeypatch.setenv("NEARDUP_CACHE_DIR", str(tmp_path / "neardup-cache"))


def assert_same(texts, expected_of, got_of):
    for text in texts:
        expected, got = expected_of(text), got_of(text)
        assert got == expected, "input %r" % text


# Words.


@pytest.mark.parametrize("mode", MODES)
def test_real_text(lines, mode):
    expected_of, got_of = MODES[mode]
    expected = [expected_of(line) for line in lines]
    got = [got_of(line) for line in lines]
    differences = [(line, e, g) for line, e, g in zip(lines, expected, got) if e != g]
    assert not differences, "%d of %d lines differ, first: %r" % (
        len(differences), len(lines), differences[:3])


@pytest.mark.parametrize("mode", MODES)
def test_synthetic_text(synthetic, mode):
    assert_same(synthetic, *MODES[mode])


@pytest.mark.parametrize("mode", MODES)
def test_long_text(lines, mode):
    # Long texts are cut with the GIL released, through the same code.
    text = "\n".join(lines[:2000])
    assert len(text.encode()) > 50_000
    assert_same([text, text.encode()], *MODES[mode])


def test_results_are_lists():
    words = neardup.cut("我来到北京清华大学")
    assert type(words) is list and all(type(w) is str for w in words)
    assert list(iter(words)) == list(jieba.cut("我来到北京清华大学"))
    assert neardup.lcut("我来到北京清华大学") == words
    assert neardup.lcut_for_search("我来到北京清华大学") == jieba.lcut_for_search("我来到北京清华大学")
    assert neardup.cut("") == [] and neardup.cut_for_search("") == []


def test_keyword_arguments():
    text = "他来到了网易杭研大厦"
    assert neardup.cut(sentence=text, cut_all=False, HMM=False) == jieba.lcut(text, HMM=False)
    assert neardup.cut(text, HMM=0) == jieba.lcut(text, HMM=0)  # truth values, as jieba
    assert neardup.cut(text, use_paddle=True) == jieba.lcut(text, use_paddle=True)
    assert neardup.cut_for_search(sentence=text, HMM=False) == jieba.lcut_for_search(text, False)
    assert neardup.dt.cut(text, True) == jieba.lcut(text, True)
    assert neardup.Tokenizer.cut(neardup.dt, text) == jieba.lcut(text)  # the Python method
    with pytest.raises(TypeError, match="unexpected keyword argument 'hmm'"):
        neardup.cut(text, hmm=False)
    with pytest.raises(TypeError, match="missing required argument 'sentence'"):
        neardup.cut()


def test_tokenize(lines):
    for line in lines[:500] + EXTRA_LINES:
        for mode in ("default", "search"):
            for hmm in (True, False):
                assert neardup.tokenize(line, mode, hmm) == list(
                    jieba.tokenize(line, mode, hmm)), line


def test_bytes_are_decoded_as_jieba_does():
    text = "我来到北京清华大学，他说的确实在理"
    for data in (text.encode(), text.encode("gbk"), bytearray(text.encode()),
                 b"\xff\xfe invalid \x80 bytes \xd6\xd0\xce\xc4"):
        assert neardup.cut(data) == jieba.lcut(data)
        assert neardup.cut_for_search(data) == jieba.lcut_for_search(data)
        assert neardup.cut(data, cut_all=True) == jieba.lcut(data, cut_all=True)
        assert neardup.extract_tags(data) == jieba.analyse.extract_tags(data)
        assert neardup.Tokenizer.cut(neardup.dt, data) == jieba.lcut(data)


def test_lone_surrogates_are_cut_as_jieba_cuts_them():
    # Policy: a str is cut as jieba cuts it, lone surrogates included (each one its own word).
    texts = ["中文\ud800测试", "\udcff", "a\udc80b\udcffc", "清华\ud83d\ude00大学\ud83d",
             b"\xe4\xb8\xad\xff\xfe\xe6\x96\x87 text".decode("utf-8", "surrogateescape"),
             "中文" * 2000 + "\udc00" + "测试" * 2000]
    for text in texts:
        for expected_of, got_of in MODES.values():
            assert got_of(text) == expected_of(text), text[:50]
        assert neardup.extract_tags(text, withWeight=True) == jieba.analyse.extract_tags(
            text, withWeight=True)


def test_bad_arguments_raise_clear_errors():
    for call in (neardup.cut, neardup.cut_for_search, neardup.extract_tags,
                 neardup.analyse.extract_tags, neardup.Tokenizer.cut):
        args = (neardup.dt,) if call is neardup.Tokenizer.cut else ()
        for bad in (123, None, 1.5, ["中文"]):
            with pytest.raises(TypeError, match="sentence must be str or bytes, not "):
                call(*args, bad)
    with pytest.raises(TypeError, match="unicode_sentence must be str"):
        neardup.tokenize(b"bytes")
    with pytest.raises(TypeError, match="word must be str or bytes, not int"):
        neardup.Tokenizer().add_word(5)
    with pytest.raises(TypeError, match="f must be a path or a file object, not int"):
        neardup.load_userdict(5)
    # The extension itself takes bytes as UTF-8 and names the first invalid byte.
    core = neardup.dt._loaded()
    assert core.cut("中文".encode()) == ["中文"]
    with pytest.raises(neardup.InvalidArgumentError, match="UTF-8") as error:
        core.cut(b"ab\xffcd")
    assert isinstance(error.value, ValueError) and "2" in str(error.value)


# Keywords.


def test_extract_tags_real_text(docs):
    for doc in docs:
        # jieba's result for topK=k is the first k of its whole sorted list.
        ranked = jieba.analyse.extract_tags(doc, topK=None, withWeight=True)
        for top in (20, 5):
            got = neardup.extract_tags(doc, topK=top, withWeight=True)
            assert got == ranked[:top]  # the same words, the same floats
            assert all(type(w) is str and type(x) is float for w, x in got)
        assert neardup.extract_tags(doc) == [word for word, _ in ranked[:20]]
        assert analyse.extract_tags(doc, 0, True) == ranked
    for doc in docs[:20]:
        for top in (None, -3, 1000):
            assert analyse.extract_tags(doc, top) == jieba.analyse.extract_tags(doc, top)


def test_extract_tags_synthetic(synthetic):
    for i in range(0, len(synthetic), 20):
        doc = "\n".join(synthetic[i:i + 20])
        assert neardup.extract_tags(doc, topK=10, withWeight=True) == jieba.analyse.extract_tags(
            doc, topK=10, withWeight=True), doc
    for line in EXTRA_LINES:
        assert neardup.extract_tags(line, withWeight=True) == jieba.analyse.extract_tags(
            line, withWeight=True)
    assert neardup.extract_tags is analyse.extract_tags


def test_any_top_k_and_any_frequency_key_as_jieba(docs):
    # A topK beyond any count is all the keywords (it overflowed a size_t); get_FREQ is jieba's
    # FREQ.get, which gives the default for any key that is not a word.
    for top in (10**20, 2**64, 2**63):
        assert neardup.extract_tags(docs[0], topK=top) == jieba.analyse.extract_tags(
            docs[0], topK=top)
    for key in (None, 5, b"\xe4\xb8\xad\xe6\x96\x87", ("中文",)):
        assert neardup.get_FREQ(key) == jieba.get_FREQ(key) is None
        assert neardup.get_FREQ(key, -1) == jieba.get_FREQ(key, -1) == -1
    with pytest.raises(TypeError):
        neardup.get_FREQ(["中文"])  # unhashable, as dict.get
    assert neardup.get_FREQ("中文") == jieba.get_FREQ("中文") > 0


def test_allow_pos_is_not_implemented():
    with pytest.raises(NotImplementedError, match="allowPOS"):
        neardup.extract_tags("我来到北京清华大学", allowPOS=("ns", "n"))
    assert neardup.extract_tags("我来到北京清华大学", allowPOS=()) == jieba.analyse.extract_tags(
        "我来到北京清华大学")


@pytest.fixture(scope="module")
def idf_file(tmp_path_factory):
    """A custom IDF table: some of jieba's words with other values, words of its own, a median of
    its own."""
    rng = random.Random(7)
    with open(JIEBA_DIR / "analyse" / "idf.txt", encoding="utf-8") as f:
        entries = [line.split() for line in f]
    chosen = rng.sample(entries, 20000)
    text = "".join("%s %.9f\n" % (word, float(value) * rng.uniform(0.5, 1.5))
                   for word, value in chosen)
    text += "对话框 0.5\n单元格 20.25\n工具栏 1e-3\n文档 3\n"
    path = tmp_path_factory.mktemp("idf") / "idf.txt"
    path.write_text(text, encoding="utf-8")
    return path


def test_custom_idf(docs, idf_file, private_cache):
    expected_tfidf = jieba.analyse.TFIDF(str(idf_file))
    tfidf = analyse.TFIDF(idf_file)
    for doc in docs[:150]:
        assert tfidf.extract_tags(doc, 15, True) == expected_tfidf.extract_tags(doc, 15, True)
    other = analyse.TFIDF()
    other.set_idf_path(str(idf_file))
    assert other.extract_tags(docs[0], withWeight=True) == expected_tfidf.extract_tags(
        docs[0], withWeight=True)


def test_module_set_idf_path(docs, idf_file, private_cache):
    default_idf = str(JIEBA_DIR / "analyse" / "idf.txt")
    try:
        analyse.set_idf_path(idf_file)
        jieba.analyse.set_idf_path(str(idf_file))
        for doc in docs[:50]:
            assert analyse.extract_tags(doc, withWeight=True) == jieba.analyse.extract_tags(
                doc, withWeight=True)
    finally:
        analyse.set_idf_path(default_idf)
        jieba.analyse.set_idf_path(default_idf)
    assert analyse.extract_tags(docs[0], withWeight=True) == jieba.analyse.extract_tags(
        docs[0], withWeight=True)


def test_bad_idf_and_stop_words_files_are_refused_when_set(docs, tmp_path, private_cache):
    # As jieba, the files are read when set: a bad one raises then and changes nothing. (It used
    # to be taken, and every extract_tags after it failed, for good.)
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\xff\xfe bad\n")
    bad_idf = tmp_path / "bad_idf.txt"
    bad_idf.write_text("单元格 12.5\n对话框 not-a-number\n", encoding="utf-8")
    missing = tmp_path / "missing.txt"
    good = tmp_path / "stop.txt"
    good.write_text("单元格\n", encoding="utf-8")
    tfidf = analyse.TFIDF()
    expected = tfidf.extract_tags(docs[0], withWeight=True)
    for set_file in (tfidf.set_stop_words, tfidf.set_idf_path, analyse.set_stop_words,
                     analyse.set_idf_path):
        with pytest.raises(neardup.InvalidArgumentError, match="bad.txt:1") as error:
            set_file(bad)
        assert isinstance(error.value, ValueError)
        with pytest.raises(neardup.NotFoundError, match="missing.txt"):
            set_file(missing)
    with pytest.raises(neardup.InvalidArgumentError, match="bad_idf.txt:2"):
        tfidf.set_idf_path(bad_idf)
    with pytest.raises(neardup.InvalidArgumentError, match="bad.txt:1"):
        analyse.TFIDF(bad)
    assert tfidf.extract_tags(docs[0], withWeight=True) == expected
    assert analyse.extract_tags(docs[0], withWeight=True) == jieba.analyse.extract_tags(
        docs[0], withWeight=True)
    # A good file after them is taken, alone.
    tfidf.set_stop_words(good)
    expected_tfidf = jieba.analyse.TFIDF()
    expected_tfidf.set_stop_words(str(good))
    for doc in docs[:30]:
        assert tfidf.extract_tags(doc, withWeight=True) == expected_tfidf.extract_tags(
            doc, withWeight=True)


def test_stop_words(docs, tmp_path):
    # The most frequent keywords become stop words: the lists change.
    first = tmp_path / "stop1.txt"
    first.write_text("单元格\n对话框\nTHE\n  文档  \n", encoding="utf-8")
    second = tmp_path / "stop2.txt"
    second.write_text("选择\r\n工具栏\u2028菜单\n", encoding="utf-8")
    expected_tfidf, tfidf = jieba.analyse.TFIDF(), analyse.TFIDF()
    for path in (first, second):  # one file, then both (the union)
        expected_tfidf.set_stop_words(str(path))
        tfidf.set_stop_words(path)
        for doc in docs[:60]:
            assert tfidf.extract_tags(doc, withWeight=True) == expected_tfidf.extract_tags(
                doc, withWeight=True)


def test_module_set_stop_words(docs, tmp_path):
    path = tmp_path / "stop.txt"
    path.write_text("单元格\n", encoding="utf-8")
    try:
        analyse.set_stop_words(path)
        jieba.analyse.set_stop_words(str(path))
        for doc in docs[:30]:
            assert analyse.extract_tags(doc) == jieba.analyse.extract_tags(doc)
            assert "单元格" not in analyse.extract_tags(doc)
    finally:
        analyse.default_tfidf._stop_words_paths.clear()
        analyse.default_tfidf._model = None
        jieba.analyse.default_tfidf.stop_words = set(jieba.analyse.TFIDF.STOP_WORDS)


# Dictionaries.


def user_word_lines(lines):
    """Real lines, and lines holding the user dictionary's words."""
    words = ["云计算", "李小福", "创新办", "easy_install", "韩玉赏鉴", "八一双鹿", "台中", "凱特琳",
             "Edu Trust认证", "文档窗口", "单元格区域", "工具栏", "对话框", "电子表格", "数据透视表"]
    made = ["李小福是创新办主任也是云计算方面的专家; 什么是八一双鹿",
            "例如我输入一个带“韩玉赏鉴”的标题，在自定义词库中也增加了此词为N类",
            "「台中」正確應該不會被切開。mac上可分出「石墨烯」；此時又可以分出來凱特琳了。",
            "easy_install is great, Edu Trust认证 too"]
    return lines[:3000] + made + [w + "和" + w + "的" + w for w in words]


def assert_tokenizers_same(tokenizer, expected, texts):
    expected.check_initialized()
    assert tokenizer.total == expected.total
    for text in texts:
        assert tokenizer.cut(text) == expected.lcut(text), text
        assert tokenizer.cut(text, HMM=False) == expected.lcut(text, HMM=False), text
        assert tokenizer.cut_for_search(text) == expected.lcut_for_search(text), text


def test_load_userdict_path(lines, force_split_restored):
    tokenizer, expected = neardup.Tokenizer(), jieba.Tokenizer()
    tokenizer.load_userdict(USER_DICT)
    expected.load_userdict(str(USER_DICT))
    assert_tokenizers_same(tokenizer, expected, user_word_lines(lines))
    for word in ("云计算", "台中", "工具栏", "Edu Trust认证", "Edu", "不存在的词", "数据透视"):
        assert tokenizer.get_FREQ(word) == expected.FREQ.get(word), word
    # Another Tokenizer is not changed.
    assert neardup.cut("李小福是创新办主任") == jieba.lcut("李小福是创新办主任")


def test_load_userdict_file_objects(lines, force_split_restored):
    data = USER_DICT.read_bytes() + "\n\ufeff 带空格 7\n文本行 n\n".encode()
    texts = user_word_lines(lines)[::5] + ["带空格的文本行"]
    for make in (lambda: io.BytesIO(data),
                 lambda: io.StringIO(data.decode("utf-8")),  # BOM kept: a word of its own
                 lambda: open(USER_DICT, encoding="utf-8-sig")):
        tokenizer, expected = neardup.Tokenizer(), jieba.Tokenizer()
        with make() as f:
            tokenizer.load_userdict(f)
        with make() as f:
            expected.load_userdict(f)
        assert_tokenizers_same(tokenizer, expected, texts)
        assert tokenizer.get_FREQ("\ufeff云计算") == expected.FREQ.get("\ufeff云计算")


def test_add_del_word_suggest_freq(lines, force_split_restored):
    tokenizer, expected = neardup.Tokenizer(), jieba.Tokenizer()
    texts = lines[:500] + ["如果放到post中将出错。", "「台中」正确应该不会被切开", "今天天气不错",
                           "中将军", "我们中出了一个叛徒", "江州市长江大桥参加了长江大桥的通车仪式",
                           "hello world 和 a b c", "石墨烯是新材料"]
    # Each change makes the next call rebuild the dictionary (a few tenths of a second): checked
    # in groups.
    groups = [
        [("suggest_freq", ("台中", True)),
         ("suggest_freq", (("今天", "天气"), False)),
         ("suggest_freq", ("中将", False))],
        [("add_word", ("石墨烯",)),
         ("add_word", ("江大桥", 20000, "nr")),
         ("add_word", ("hello world",)),  # no line says it without a frequency: computed here
         ("add_word", (" a b", "3")),
         ("add_word", ("trailing ",)),
         ("del_word", ("长江大桥",)),
         ("del_word", ("出了",)),
         ("add_word", ("新材料", 0))],
        [("suggest_freq", (("中", "将"), True))],
    ]
    for steps in groups:
        for name, args in steps:
            got = getattr(tokenizer, name)(*args)
            assert got == getattr(expected, name)(*args), (name, args)
        assert_tokenizers_same(tokenizer, expected, texts)
    for word in ("石墨烯", "江大桥", "hello world", " a b", "trailing ", "长江大桥", "中将", "台中"):
        assert tokenizer.get_FREQ(word, -1) == expected.FREQ.get(word, -1), word
    with pytest.raises(ValueError, match="cannot be added"):
        tokenizer.add_word("two\nlines")
    with pytest.raises(ValueError, match="cannot be added"):
        tokenizer.add_word("", 5)
    with pytest.raises(ValueError, match="out of range"):
        tokenizer.add_word("负数", -1)
    with pytest.raises(ValueError):
        tokenizer.add_word("非数字", "x")  # int("x"), as jieba


def test_dictionary_errors_change_nothing(tmp_path):
    tokenizer = neardup.Tokenizer()
    bad = tmp_path / "bad.txt"
    bad.write_bytes("好词 5\n".encode() + b"\xff\xfe 3\n")
    with pytest.raises(neardup.InvalidArgumentError, match="bad.txt:2") as error:
        tokenizer.load_userdict(bad)
    assert isinstance(error.value, ValueError)
    with pytest.raises(neardup.InvalidArgumentError,
                       match="dictionary file <_io.BytesIO .*> must be utf-8"):
        tokenizer.load_userdict(io.BytesIO(b"\xff\xfe 3\n"))
    with pytest.raises(neardup.InvalidArgumentError, match="frequency too large"):
        tokenizer.load_userdict(io.BytesIO(b"word 99999999999999999999\n"))
    assert tokenizer.get_FREQ("好词") is None
    assert tokenizer.total == neardup.dt.total


def test_words_no_dictionary_can_hold_are_refused(lines, force_split_restored):
    # A lone surrogate cannot be written in UTF-8, the dictionary's encoding: add_word (and what
    # calls it) refuses it, leaving the Tokenizer as it was. (It used to be taken, and every cut
    # after it failed.) jieba takes it, but never cuts it out: it is a character of no word.
    tokenizer, expected = neardup.Tokenizer(), jieba.Tokenizer()
    tokenizer.add_word("石墨烯")
    expected.add_word("石墨烯")
    calls = [lambda: tokenizer.add_word("\ud800"),
             lambda: tokenizer.add_word("好\udcff词", 5, "n"),
             lambda: tokenizer.add_word("好\udcff词".encode("utf-8", "surrogatepass")),  # GBK
             lambda: tokenizer.del_word("\ud800"),
             lambda: tokenizer.suggest_freq("中\ud800", True),
             lambda: tokenizer.suggest_freq(("中", "\ud800"), True),
             lambda: tokenizer.load_userdict(io.StringIO("好词 5\n坏\ud800词 3 n\n"))]
    for number, call in enumerate(calls):
        if number == 2:
            # bytes that are not UTF-8 are decoded as GBK, as jieba does: a word without a
            # surrogate, taken.
            call()
            expected.add_word("好\udcff词".encode("utf-8", "surrogatepass"))
            continue
        with pytest.raises(neardup.InvalidArgumentError, match="lone surrogate") as error:
            call()
        assert isinstance(error.value, ValueError)
    assert tokenizer.get_FREQ("好词") is None and tokenizer.user_word_tag_tab == {}
    assert_tokenizers_same(tokenizer, expected, lines[:200] + ["石墨烯是新材料", "中\ud800文"])
    tokenizer.del_word("石墨烯")
    expected.del_word("石墨烯")
    assert_tokenizers_same(tokenizer, expected, ["石墨烯是新材料"])


def test_user_word_tags(tmp_path, force_split_restored):
    # jieba keeps the tags of user words (add_word's, load_userdict's lines') in
    # user_word_tag_tab, and the default Tokenizer's at module level.
    assert neardup.user_word_tag_tab is neardup.dt.user_word_tag_tab
    assert "user_word_tag_tab" in neardup.__all__
    data = USER_DICT.read_bytes() + "\n带空格 7 x\n文本行 n\n".encode()
    path = tmp_path / "userdict.txt"
    path.write_bytes(data)
    for make in (lambda: path, lambda: str(path), lambda: io.BytesIO(data),
                 lambda: io.StringIO(data.decode("utf-8"))):
        tokenizer, expected = neardup.Tokenizer(), jieba.Tokenizer()
        tokenizer.load_userdict(make())
        expected.load_userdict(str(path) if isinstance(make(), pathlib.Path) else make())
        assert tokenizer.user_word_tag_tab == expected.user_word_tag_tab
        assert tokenizer.user_word_tag_tab["李小福"] == "nr"
        assert tokenizer.user_word_tag_tab["文本行"] == "n"
        tokenizer.add_word("石墨烯", 5, "nz")
        tokenizer.add_word("李小福", 3)  # no tag: the one it had stays, as in jieba
        assert tokenizer.user_word_tag_tab["石墨烯"] == "nz"
        assert tokenizer.user_word_tag_tab["李小福"] == "nr"
    # A file refused adds no tag.
    tokenizer = neardup.Tokenizer()
    with pytest.raises(neardup.InvalidArgumentError):
        tokenizer.load_userdict(io.BytesIO("好词 5 n\n".encode() + b"\xff\xfe 3\n"))
    assert tokenizer.user_word_tag_tab == {}


def test_custom_dictionary(tmp_path, lines, private_cache):
    # Every third word of jieba's dictionary: other words, other frequencies, another total.
    with open(JIEBA_DIR / "dict.txt", encoding="utf-8") as f:
        small = tmp_path / "small.txt"
        small.write_text("".join(line for i, line in enumerate(f) if i % 3 == 0),
                         encoding="utf-8")
    tokenizer, expected = neardup.Tokenizer(str(small)), jieba.Tokenizer(str(small))
    expected.tmp_dir = str(tmp_path)  # jieba's cache file of that dictionary: not in /tmp
    assert_tokenizers_same(tokenizer, expected, lines[:1500])
    switched = neardup.Tokenizer()
    switched.load_userdict(USER_DICT)
    switched.set_dictionary(small)  # drops the user words, as jieba
    assert_tokenizers_same(switched, expected, lines[:300])
    again = neardup.Tokenizer()
    again.initialize(small)
    assert again.initialized and again.dictionary == str(small)
    assert_tokenizers_same(again, expected, lines[:300])


def test_missing_files(tmp_path):
    missing = str(tmp_path / "missing.txt")
    calls = [
        lambda: neardup.Tokenizer(missing),
        lambda: neardup.Tokenizer().set_dictionary(missing),
        lambda: neardup.Tokenizer().initialize(missing),
        lambda: neardup.Tokenizer().load_userdict(missing),
        lambda: analyse.TFIDF(missing),
        lambda: analyse.TFIDF().set_idf_path(missing),
        lambda: analyse.TFIDF().set_stop_words(missing),
        lambda: _neardup.Tokenizer(missing),
        lambda: _neardup.Tokenizer(None, [missing]),
        lambda: _neardup.KeywordModel(neardup.dt._loaded(), missing),
        lambda: _neardup.KeywordModel(neardup.dt._loaded(), None, [missing]),
    ]
    for call in calls:
        with pytest.raises(neardup.NotFoundError) as error:
            call()
        assert isinstance(error.value, FileNotFoundError)
        assert missing in str(error.value)


def test_extract_tags_cuts_with_the_tokenizer(docs, force_split_restored):
    tfidf, expected_tfidf = analyse.TFIDF(), jieba.analyse.TFIDF()
    tfidf.tokenizer, expected_tfidf.tokenizer = neardup.Tokenizer(), jieba.Tokenizer()
    tfidf.tokenizer.load_userdict(USER_DICT)
    expected_tfidf.tokenizer.load_userdict(str(USER_DICT))
    for doc in docs[:60]:
        assert tfidf.extract_tags(doc, withWeight=True) == expected_tfidf.extract_tags(
            doc, withWeight=True)


# Threads.


def test_threads_get_the_serial_results(lines, docs):
    long_texts = ["\n".join(lines[i:i + 400]) for i in range(0, 2000, 400)]

    def work(tokenizer, seed):
        rng = random.Random(seed)
        order = list(range(len(lines)))
        rng.shuffle(order)
        cut = {i: neardup.cut(lines[i]) for i in order}
        search = {i: tokenizer.cut_for_search(lines[i]) for i in order[:2000]}
        long = [neardup.cut(text) for text in long_texts]
        tags = [neardup.extract_tags(doc, withWeight=True) for doc in docs[:40]]
        return cut, search, long, tags

    def tokenizer_with_a_word():
        tokenizer = neardup.Tokenizer()
        tokenizer.add_word("石墨烯")  # loaded at the first call
        return tokenizer

    expected = work(tokenizer_with_a_word(), 0)
    shared = tokenizer_with_a_word()  # the threads race to load it
    results = [None] * 8
    barrier = threading.Barrier(len(results))

    def run(k):
        barrier.wait()
        results[k] = work(shared, k + 1)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(results))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for cut, search, long, tags in results:
        assert cut == expected[0]
        assert all(words == expected[1].get(i, words) for i, words in search.items())
        assert all(words == shared.cut_for_search(lines[i]) for i, words in search.items())
        assert long == expected[2] and tags == expected[3]


def test_long_calls_release_the_gil(lines, docs):
    # While a thread cuts a long text, this one keeps running: its longest pause is much shorter
    # than the call (with the GIL held throughout, it would be as long, every time). A machine busy
    # with other work can hold this thread back on its own, so each call has three tries.
    text = "\n".join(lines) * 30

    def longest_pause(call):
        timing = {}

        def work():
            start = time.perf_counter()
            call(text)
            timing["call"] = time.perf_counter() - start

        thread = threading.Thread(target=work)
        longest, last = 0.0, time.perf_counter()
        thread.start()
        while thread.is_alive():
            now = time.perf_counter()
            longest, last = max(longest, now - last), now
        thread.join()
        assert timing["call"] > 0.03
        return longest, timing["call"]

    for call in (neardup.cut, neardup.cut_for_search, neardup.extract_tags):
        call(text[:10000])
        tries = []
        for _ in range(3):
            longest, duration = longest_pause(call)
            tries.append((longest, duration))
            if longest < 0.6 * duration:
                break
        else:
            raise AssertionError((call, tries))
