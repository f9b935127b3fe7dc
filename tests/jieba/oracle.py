#!/usr/bin/python3
"""Oracle tests: neardup's segmenter and keyword extractor against Python's jieba on real text.

The corpus is taken at test time from the Chinese LibreOffice help pages (Debian package
libreoffice-help-zh-cn): the text of each HTML page, in file-name order.

  oracle.py segment  NEARDUP [--lines N]  jieba.lcut of each distinct line containing Han characters
  oracle.py keywords NEARDUP [--docs N]   jieba.analyse.extract_tags(page, topK, withWeight=True)
  oracle.py search|all NEARDUP            lcut_for_search / lcut(cut_all=True) of the same lines
  oracle.py ties NEARDUP --ties FILE      lcut and lcut_for_search of lines whose HMM has exact ties

Any difference fails the test; the first differing lines are printed.
"""
import argparse
import glob
import html.parser
import json
import logging
import os
import re
import subprocess
import sys
import tempfile

HELP_DIR = "/usr/share/libreoffice/help/zh-CN"
HAN = re.compile("[\u4e00-\u9fd5]")


class TextExtractor(html.parser.HTMLParser):
    """The visible text of a page: data outside script/style, one line per text node."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts = []
        self.skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self.skip += 1

    def handle_endtag(self, tag):
        if tag in ("script", "style") and self.skip:
            self.skip -= 1

    def handle_data(self, data):
        if not self.skip and data.strip():
            self.parts.append(data)


def pages():
    files = sorted(glob.glob(os.path.join(HELP_DIR, "text", "**", "*.html"), recursive=True))
    if not files:
        sys.exit("no pages in %s: install libreoffice-help-zh-cn (scripts/install-deps.sh)" % HELP_DIR)
    for path in files:
        parser = TextExtractor()
        with open(path, encoding="utf-8") as f:
            parser.feed(f.read())
        yield path, parser.parts


def corpus_lines(limit):
    seen, lines = set(), []
    for _, parts in pages():
        for part in parts:
            for line in part.split("\n"):
                if HAN.search(line) and line not in seen:
                    seen.add(line)
                    lines.append(line)
                    if len(lines) == limit:
                        return lines
    return lines


def corpus_docs(limit):
    docs = []
    for path, parts in pages():
        text = "\n".join(parts)
        if HAN.search(text):
            docs.append((os.path.relpath(path, HELP_DIR), text))
            if len(docs) == limit:
                break
    return docs


def synthetic_lines(count):
    """Random strings over the characters jieba treats specially, mixed with frequent Han text."""
    import random
    rng = random.Random(20240601)
    han = "的一是了我不人在他有这个上们来到时大地为子中你说生国年着就那和要她出也得里后自以会家可下而过天去能对小多然于心学么之都好看起发当没成只如事把还用第样道想作种开美总从无情己面最女但现前些所同日手又行意动方期它头经长儿回位分爱老因很给名法间斯知世什两次使身者被高已亲其进此话常与活正感见明问力理尔点文几定本公特做外孩相西果走将月十实向声车全信重三机工物气每并别真打太新比才便夫再书部水像眼等体却加电主界门利海受听表德少克代员许稜先口由死安写性马光白或住难望教命花结乐色更拉东神记处让母父应直字场平报友关放至张认接告入笑内英军候民岁往何度山觉路带万男边风解叫任金快原吃妈变通师立象数四失满战远格士音轻目条呢病始达深完今提求清王化空业思切怎非找片罗钱紶吗语元喜曾离飞科言干流欢约各即指合反题必该论交终林请医晚制球决窢传画保读运及则房早院量苦火布品近坐产答星精视五连司巴奇管类未朋且婚台夜青北队久乎越观落尽形影红爸百令周吧识步希亚术留市半热送兴造谈容极随演收首根讲整式取照办强石古华諣拿计您装似足双妻尼转诉米称丽客南领节衣站黑刻统断福城故历惊脸选包紧争另建维绝树系伤示愿持千史谁准联妇纪基买志静阿诗独复痛消社算义竟确酒需单治卡幸兰念举仅钟怕共毛句息功官待究跟穿室易游程号居考突皮哪费倒价图具刚脑永歌响商礼细专黄块脚味灵改据般破引食仍存众注笔甚某沉血备习校默务土微娘须试怀料调广蜖苏显赛查密议底列富梦错座参八除跑亮假印设线温虽掉京初养香停际致阳纸李纳验助激够严证帝饭忘趣支春集丈木研班普导顿睡展跳获艺六波察群皇段急庭创区奥器谢弟店否害草排背止组州朝封睛板角况曲馆育忙质河续哥呼若推境遇雨标姐充围案伦护冷警贝著雪索剧啊船险烟依斗值帮汉慢佛肯闻唱沙局伯族低玩资屋击速顾泪洲团圣旁堂兵七露园牛哭旅街劳型烈姑陈莫鱼异抱宝权鲁简态级票怪寻杀律胜份汽右洋范床舞秘午登楼贵吸责例追较职属渐左录丝牙党继托赶章智冲叶胡吉卖坚喝肉遗救修松临藏担戏善卫药悲敢靠伊村戴词森耳差短祖云规窗散迷油旧适乡架恩投弹铁博雷府压超负勒杂醒洗采毫嘴毕九冰既状乱景席珍童顶派素脱农疑练野按犯拍征坏骨余承置臓彩灯巨琴免环姆暗换技翻束增忍餐洛塞缺忆判欧层付阵玛批岛项狗休懂武革良恶恋委拥娜妙探呀营退摇弄桌熟诺宣银势奖宫忽套康供优课鸟喊降夏困刘罪亡鞋健模败伴守挥鲜财孤枪禁恐伙杰迹妹藸遍盖副坦牌江顺秋萨菜划授归浪听凡预奶雄升碃编典袋莱含盛济蒙棋端腿招释介烧误乾坤"
    specials = ["\r\n", "\r", "\n", "\t", " ", "\u3000", "\xa0", "\u2028", "\x1c", "\x85", "\u200b",
                "，", "。", "、", "「", "」", "（", "）", "：", ".", "%", "+", "#", "&", "_", "-",
                "1", "2", "3.", "45", "6.7", "8%", "a", "B", "c", "Ab", "iPhone", "C++", "c#",
                "\u9fd5", "\u9fd6", "\u4e00", "\u3400", "\U00020000", "ア", "の", "한", "é", "\ufffd",
                "γ射线", "AT&T", "B超", "T恤", "中国", "北京大学", "清华大学", "研究生命", "长江大桥"]
    lines = []
    for _ in range(count):
        pieces = []
        for _ in range(rng.randint(1, 30)):
            r = rng.random()
            if r < 0.6:
                pieces.append("".join(rng.choice(han) for _ in range(rng.randint(1, 8))))
            else:
                pieces.append(rng.choice(specials))
        line = "".join(pieces).replace("\n", "")
        if line.strip("\r") != line:
            line = line.strip("\r")
        lines.append(line)
    return lines


def tie_flipped_viterbi(flip):
    """jieba.finalseg.viterbi, except that ties at state `flip` (its two predecessors, or "end": the
    final choice between E and S) go to the smaller letter instead of the larger."""
    import jieba.finalseg as finalseg

    def smaller_letter_wins(candidate):
        return (candidate[0], -ord(candidate[1]))

    def viterbi(obs, states, start_p, trans_p, emit_p):
        v = [{y: start_p[y] + emit_p[y].get(obs[0], finalseg.MIN_FLOAT) for y in states}]
        path = {y: [y] for y in states}
        for t in range(1, len(obs)):
            v.append({})
            new_path = {}
            for y in states:
                emit = emit_p[y].get(obs[t], finalseg.MIN_FLOAT)
                candidates = [(v[t - 1][y0] + trans_p[y0].get(y, finalseg.MIN_FLOAT) + emit, y0)
                              for y0 in finalseg.PrevStatus[y]]
                prob, state = max(candidates, key=smaller_letter_wins if y == flip else None)
                v[t][y] = prob
                new_path[y] = path[state] + [y]
            path = new_path
        prob, state = max(((v[-1][y], y) for y in "ES"),
                          key=smaller_letter_wins if flip == "end" else None)
        return prob, path[state]

    return viterbi


def tie_lines(path):
    """The lines of a ties file (TAG<TAB>TEXT); each must change under jieba when its tie flips."""
    import jieba
    import jieba.finalseg as finalseg
    entries = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            tag, text = line.split("\t", 1)
            original = finalseg.viterbi
            expected = jieba.lcut(text)
            try:
                finalseg.viterbi = tie_flipped_viterbi(tag)
                flipped = jieba.lcut(text)
            finally:
                finalseg.viterbi = original
            if flipped == expected:
                sys.exit("%s:%d: flipping the %s tie does not change jieba's words: %s" %
                         (path, number, tag, json.dumps(expected, ensure_ascii=False)))
            entries.append((tag, text))
    tags = {tag for tag, _ in entries}
    if tags != {"B", "M", "S", "E", "end"}:
        sys.exit("%s: ties of B, M, S, E and end needed, found %s" % (path, sorted(tags)))
    return [text for _, text in entries]


def check_ties(neardup, path):
    import jieba
    lines = tie_lines(path)
    for mode in ("default", "search"):
        got = run_neardup([neardup, "segment", "--json", "--mode", mode], "\n".join(lines) + "\n")
        expected = [jieba.lcut_for_search(line) if mode == "search" else jieba.lcut(line)
                    for line in lines]
        differences = [(l, e, g) for l, e, g in zip(lines, expected, got) if e != g]
        if len(got) != len(lines):
            differences.append(("(line count)", len(lines), len(got)))
        report("segment --mode %s, HMM ties" % mode, len(lines), differences)


def run_neardup_once(args, stdin_text, cache_dir):
    env = dict(os.environ, NEARDUP_CACHE_DIR=cache_dir)
    result = subprocess.run(args, input=stdin_text.encode("utf-8"), capture_output=True, env=env)
    if result.returncode != 0:
        sys.exit("%s failed (%d): %s" % (" ".join(args), result.returncode, result.stderr.decode()))
    return [json.loads(line) for line in result.stdout.decode("utf-8").split("\n") if line]


def run_neardup(args, stdin_text):
    """Runs neardup twice with a fresh cache directory: first with no cache file present (it parses
    jieba's files and writes the cache), then from the cache; both outputs must be the same."""
    with tempfile.TemporaryDirectory(prefix="neardup-oracle-cache-") as cache_dir:
        parsed = run_neardup_once(args, stdin_text, cache_dir)
        if not os.listdir(cache_dir):
            sys.exit("%s wrote no cache file in %s" % (" ".join(args), cache_dir))
        cached = run_neardup_once(args, stdin_text, cache_dir)
    if cached != parsed:
        first = next(i for i, (a, b) in enumerate(zip(parsed, cached + [None] * len(parsed))) if a != b)
        sys.exit("output from the cache differs from the parsed dictionary at line %d:\n  %s\n  %s" %
                 (first + 1, json.dumps(parsed[first], ensure_ascii=False)[:300],
                  json.dumps(cached[first] if first < len(cached) else None, ensure_ascii=False)[:300]))
    return parsed


def report(kind, total, differences):
    if differences:
        print("%s: %d of %d differ; first differences:" % (kind, len(differences), total))
        for text, expected, got in differences[:5]:
            print("  input:  %s" % json.dumps(text, ensure_ascii=False)[:300])
            print("  jieba:  %s" % json.dumps(expected, ensure_ascii=False)[:600])
            print("  neardup:%s" % json.dumps(got, ensure_ascii=False)[:600])
        sys.exit(1)
    print("%s: %d of %d identical" % (kind, total, total))


def check_segment(neardup, mode, limit, extra, synthetic=False, hmm=True):
    import jieba
    lines = synthetic_lines(limit) if synthetic else corpus_lines(limit)
    if len(lines) < limit:
        sys.exit("only %d lines found, %d needed" % (len(lines), limit))
    if not hmm:
        extra = extra + ["--no-hmm"]
    got = run_neardup([neardup, "segment", "--json", "--mode", mode] + extra, "\n".join(lines) + "\n")
    if mode == "search":
        expected = [jieba.lcut_for_search(line, HMM=hmm) for line in lines]
    else:
        expected = [jieba.lcut(line, cut_all=(mode == "all"), HMM=hmm) for line in lines]
    differences = [(l, e, g) for l, e, g in zip(lines, expected, got) if e != g]
    if len(got) != len(lines):
        differences.append(("(line count)", len(lines), len(got)))
    chars = sum(len(l) for l in lines)
    report("segment --mode %s%s%s (%d characters)" % (mode, "" if hmm else " --no-hmm",
           " synthetic" if synthetic else "", chars), len(lines), differences)


def check_keywords(neardup, limit, top, extra):
    import jieba.analyse
    docs = corpus_docs(limit)
    if len(docs) < limit:
        sys.exit("only %d documents found, %d needed" % (len(docs), limit))
    jsonl = "".join(json.dumps({"id": name, "text": text}, ensure_ascii=False) + "\n"
                    for name, text in docs)
    got = run_neardup([neardup, "keywords", "--jsonl", "--json", "--top", str(top)] + extra, jsonl)
    differences = []
    exact = 0
    for (name, text), line in zip(docs, got):
        expected = jieba.analyse.extract_tags(text, topK=top, withWeight=True)
        words = [w for w, _ in line]
        same = (words == [w for w, _ in expected] and
                all(abs(a[1] - b) <= 1e-9 for a, (_, b) in zip(line, expected)))
        if not same:
            differences.append((name, [list(x) for x in expected], line))
        elif all(a[1] == b for a, (_, b) in zip(line, expected)):
            exact += 1
    if len(got) != len(docs):
        differences.append(("(document count)", len(docs), len(got)))
    report("keywords --top %d (%d bytes, %d documents with bit-identical weights)" %
           (top, sum(len(t.encode()) for _, t in docs), exact), len(docs), differences)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("check", choices=["segment", "search", "all", "keywords", "ties"])
    parser.add_argument("neardup")
    parser.add_argument("--lines", type=int, default=6000)
    parser.add_argument("--docs", type=int, default=2200)
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--user-dict", default=None)
    parser.add_argument("--synthetic", action="store_true", help="random tricky lines, every mode")
    parser.add_argument("--ties", default=None, help="file of lines with HMM ties (hmm_ties.txt)")
    args = parser.parse_args()
    import jieba
    jieba.setLogLevel(logging.ERROR)
    extra = []
    if args.user_dict:
        jieba.load_userdict(args.user_dict)
        extra = ["--user-dict", args.user_dict]
    if args.check == "ties":
        check_ties(args.neardup, args.ties)
    elif args.check == "keywords":
        check_keywords(args.neardup, args.docs, args.top, extra)
    else:
        mode = {"segment": "default", "search": "search", "all": "all"}[args.check]
        if args.synthetic:
            for m, hmm in (("default", True), ("default", False), ("search", True), ("all", True)):
                check_segment(args.neardup, m, args.lines, extra, synthetic=True, hmm=hmm)
        else:
            check_segment(args.neardup, mode, args.lines, extra)


if __name__ == "__main__":
    main()
