// The WebAssembly build against the native CLI on real text (LibreOffice help paragraphs in
// English and Chinese, classical Chinese in both scripts, blank and symbol-only lines): the
// default method's sketches and band keys, and SimHash under several option sets, are equal.
import assert from "node:assert/strict";
import { test } from "node:test";

import { hasCjk, loadNeardup, nativeSign, realTexts } from "./common.mjs";

const neardup = await loadNeardup();
const texts = realTexts();

test("real corpora: enough text of each kind", () => {
  assert.ok(texts.length >= 2000, `${texts.length} texts`);
  assert.ok(texts.filter((t) => hasCjk(t)).length >= 500);
  assert.ok(texts.filter((t) => /^[\x20-\x7e]+$/.test(t)).length >= 500);
});

test("the default method: sketch and band keys equal `neardup hash --sketch`", () => {
  const native = nativeSign(texts, ["--sketch"]);
  assert.equal(native.length, texts.length);
  texts.forEach((text, i) => {
    const mine = neardup.sketch(text);
    assert.equal(mine.sketchHex, native[i].sketch, `sketch of text ${i}: ${JSON.stringify(text.slice(0, 80))}`);
    assert.equal(mine.bandsHex, native[i].bands, `band keys of text ${i}`);
  });
});

test("the default method at another threshold", () => {
  const native = nativeSign(texts.slice(0, 400), ["--sketch", "--threshold", "0.6"]);
  texts.slice(0, 400).forEach((text, i) => {
    assert.equal(neardup.sketch(text, { threshold: 0.6 }).bandsHex, native[i].bands, `text ${i}`);
  });
});

const simhashCases = [
  [{}, []],
  [{ lang: "en" }, ["--lang", "en"]],
  [{ shingleUnit: "char", shingleSize: 5 }, ["--shingle-unit", "char", "-n", "5"]],
  [{ shingleUnit: "char", shingleSize: 5, weighting: "distinct", fold: "t2s" },
   ["--shingle-unit", "char", "-n", "5", "--weighting", "distinct", "--fold", "t2s"]],
  [{ lang: "en", normalize: false, shingleSize: 2 }, ["--lang", "en", "--no-normalize", "-n", "2"]],
  [{ mode: "terms", lang: "en" }, ["--mode", "terms", "--lang", "en"]],
];

for (const [options, flags] of simhashCases) {
  test(`SimHash ${JSON.stringify(options)} equals \`neardup hash ${flags.join(" ")}\``, () => {
    const native = nativeSign(texts, flags);
    assert.equal(native.length, texts.length);
    let compared = 0;
    texts.forEach((text, i) => {
      const segments = options.lang !== "en" && (options.shingleUnit ?? "word") === "word";
      if (segments && hasCjk(text.normalize("NFKC"))) {
        assert.throws(() => neardup.simhash(text, options), /jieba's dictionary is not in the WebAssembly build/);
        return;
      }
      assert.equal(neardup.simhash(text, options), native[i].simhash, `text ${i}: ${JSON.stringify(text.slice(0, 80))}`);
      ++compared;
    });
    assert.ok(compared >= 1000, `${compared} compared`);
  });
}

test("estimateJaccard: exact for small documents, close to the truth for large ones", () => {
  const fiveGrams = (text) => {
    const set = new Set();
    for (let i = 0; i + 5 <= text.length; ++i) set.add(text.slice(i, i + 5));
    return set;
  };
  const jaccard = (a, b) => {
    const x = fiveGrams(a), y = fiveGrams(b);
    let both = 0;
    for (const g of x) if (y.has(g)) ++both;
    return both / (x.size + y.size - both);
  };
  // At most 44 distinct 5-grams: the sketches hold the sets themselves.
  const small = ["the quick brown fox jumps over", "the quick brown fox jumped over", "a lazy dog sleeps"];
  for (const a of small) {
    for (const b of small) {
      const estimate = neardup.estimateJaccard(neardup.sketch(a).sketch, neardup.sketch(b).sketchHex);
      assert.ok(Math.abs(estimate - jaccard(a, b)) < 1e-6, `${a} / ${b}: ${estimate} vs ${jaccard(a, b)}`);
    }
  }
  const base = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt " +
               "ut labore et dolore magna aliqua ut enim ad minim veniam quis nostrud exercitation " +
               "ullamco laboris nisi ut aliquip ex ea commodo consequat duis aute irure dolor in";
  const edited = base.replace("magna aliqua", "magna aliquam").replace("nisi ut", "nisi at");
  const truth = jaccard(base, edited);
  const estimate = neardup.estimateJaccard(neardup.sketch(base).sketch, neardup.sketch(edited).sketch);
  assert.ok(Math.abs(estimate - truth) < 0.08, `estimate ${estimate}, truth ${truth}`);
  assert.equal(neardup.estimateJaccard(neardup.sketch(base).sketch, neardup.sketch(base).sketch), 1);
});

test("hammingDistance counts differing bits, as the CLI's compare does", () => {
  const a = neardup.simhash(texts[0]), b = neardup.simhash(texts[1]);
  const expected = [...(BigInt("0x" + a) ^ BigInt("0x" + b)).toString(2)].filter((c) => c === "1").length;
  assert.equal(neardup.hammingDistance(a, b), expected);
  assert.equal(neardup.hammingDistance(BigInt("0x" + a), b), expected);
  assert.equal(neardup.hammingDistance("ffffffffffffffff", "0000000000000000"), 64);
  assert.equal(neardup.hammingDistance(a, a), 0);
});
