"""Edited copies of Chinese documents: the edits that make near-duplicates on the web.

Every edit takes the text and a random.Random (the harness seeds it, so collections are reproducible)
and returns the edited text. The strengths are drawn so that some copies stay above the ground truth's
threshold (Jaccard of 5-shingles >= 0.8) and some fall below it: the truth, not the edit, decides.

  typo           0.3% to 2% of the CJK characters replaced, inserted or deleted
  reorder        1 to 3 sentences moved elsewhere
  delete         5% to 25% of the sentences deleted (at least one)
  header_footer  a source/date header line and an editor/copyright/counter footer added
  width          ASCII letters, digits and punctuation turned full-width, Chinese punctuation ASCII
  truncate       the text cut after 60% to 95% of its characters
  combined       two different edits of the above, one after the other
"""

import random
import re

EDIT_TYPES = ["typo", "reorder", "delete", "header_footer", "width", "truncate", "combined"]

# Common characters used as typos (replacements and insertions).
_TYPO_CHARACTERS = ("的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动"
                    "同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自"
                    "二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日")
_SITES = ["新华网", "人民网", "中国新闻网", "新浪科技", "腾讯新闻", "网易", "搜狐", "凤凰网", "澎湃新闻",
          "环球网", "央视网", "光明网", "中青在线", "IT之家", "百度百家号", "今日头条"]
_EDITORS = ["王伟", "李娜", "张敏", "刘洋", "陈静", "杨帆", "赵磊", "黄丽", "周杰", "吴芳"]
_SENTENCE_END = re.compile(r"(?<=[。！？!?；;\n])")
_CJK = re.compile(r"[\u4e00-\u9fff]")


def split_sentences(text):
    return [s for s in _SENTENCE_END.split(text) if s]


def typo(text, rng):
    positions = [m.start() for m in _CJK.finditer(text)]
    if not positions:
        return text
    count = max(1, round(len(positions) * rng.uniform(0.003, 0.02)))
    chars = list(text)
    for pos in sorted(rng.sample(positions, min(count, len(positions))), reverse=True):
        kind = rng.random()
        if kind < 0.6:
            chars[pos] = rng.choice(_TYPO_CHARACTERS)
        elif kind < 0.8:
            chars.insert(pos, rng.choice(_TYPO_CHARACTERS))
        else:
            del chars[pos]
    return "".join(chars)


def reorder(text, rng):
    sentences = split_sentences(text)
    if len(sentences) < 3:
        return typo(text, rng)
    for _ in range(rng.randint(1, 3)):
        sentence = sentences.pop(rng.randrange(len(sentences)))
        sentences.insert(rng.randrange(len(sentences) + 1), sentence)
    return "".join(sentences)


def delete(text, rng):
    sentences = split_sentences(text)
    if len(sentences) < 3:
        return truncate(text, rng)
    count = max(1, round(len(sentences) * rng.uniform(0.05, 0.25)))
    dropped = set(rng.sample(range(len(sentences)), count))
    return "".join(s for i, s in enumerate(sentences) if i not in dropped)


def header_footer(text, rng):
    site = rng.choice(_SITES)
    date = "%d-%02d-%02d %02d:%02d" % (rng.randint(2015, 2024), rng.randint(1, 12),
                                       rng.randint(1, 28), rng.randint(0, 23), rng.randint(0, 59))
    header = rng.choice(["来源：%s　%s\n" % (site, date), "%s 来源：%s\n" % (date, site),
                         "发布时间：%s　作者：%s\n" % (date, rng.choice(_EDITORS))])
    footer = rng.choice([
        "\n（责任编辑：%s）" % rng.choice(_EDITORS),
        "\n本文来源于%s，版权归原作者所有，如有侵权请联系删除。" % site,
        "\n阅读 %d　点赞 %d　分享到：微信 微博 QQ空间" % (rng.randint(100, 99999), rng.randint(0, 999)),
    ])
    return header + text + footer


def width(text, rng):
    del rng
    wide = []
    for ch in text:
        code = ord(ch)
        if 0x21 <= code <= 0x7E:
            wide.append(chr(code + 0xFEE0))
        elif ch == " ":
            wide.append("\u3000")
        else:
            wide.append({"，": ",", "。": ".", "：": ":", "；": ";", "（": "(", "）": ")"}.get(ch, ch))
    return "".join(wide)


def truncate(text, rng):
    return text[:max(1, round(len(text) * rng.uniform(0.6, 0.95)))]


_SIMPLE_EDITS = {"typo": typo, "reorder": reorder, "delete": delete, "header_footer": header_footer,
                 "width": width, "truncate": truncate}


def combined(text, rng):
    first, second = rng.sample(sorted(_SIMPLE_EDITS), 2)
    return _SIMPLE_EDITS[second](_SIMPLE_EDITS[first](text, rng), rng)


def apply_edit(edit, text, rng):
    """The copy of text made by the named edit (one of EDIT_TYPES)."""
    if edit == "combined":
        return combined(text, rng)
    return _SIMPLE_EDITS[edit](text, rng)
