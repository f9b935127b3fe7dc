// Bad input to the JavaScript layer: a thrown error naming the problem, and a module that goes on
// working afterwards (never a crash of the module).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { test } from "node:test";

import { jsDir, loadNeardup } from "./common.mjs";

test("calls before load() say so", async () => {
  // A fresh copy of the module's JavaScript (a query string makes it another module instance).
  const fresh = await import(pathToFileURL(join(jsDir, "neardup.mjs")).href + "?fresh");
  assert.throws(() => fresh.simhash("text"), /not loaded: await neardup.load\(\) first/);
});

const neardup = await loadNeardup();
const good = neardup.simhash("a text that signs before and after the bad input");

test("texts that are not strings", () => {
  for (const value of [undefined, null, 42, 4n, true, {}, [], new Uint8Array(3), Symbol("s")]) {
    assert.throws(() => neardup.simhash(value), (error) => error instanceof TypeError &&
                  /neardup\.sign: the text must be a string, not /.test(error.message), String(typeof value));
    assert.throws(() => neardup.sketch(value), TypeError);
  }
});

test("lone surrogates name their place", () => {
  assert.throws(() => neardup.simhash("abc\ud800def"),
                { name: "TypeError", message: /lone surrogate \(U\+D800\) at UTF-16 index 3/ });
  assert.throws(() => neardup.sketch("x\udfff"), { message: /lone surrogate \(U\+DFFF\) at UTF-16 index 1/ });
  assert.throws(() => neardup.simhash("\udc00\ud800"), /at UTF-16 index 0/);
  // A pair is one code point, not a lone surrogate.
  assert.match(neardup.simhash("emoji \ud83d\ude00 pair"), /^[0-9a-f]{16}$/);
});

test("unknown or mistyped options", () => {
  assert.throws(() => neardup.simhash("t", { mode: "words" }), /option mode must be one of shingles, terms, keywords, not "words"/);
  assert.throws(() => neardup.simhash("t", { shingle_size: 3 }), /unknown option 'shingle_size' \(expected mode, lang/);
  assert.throws(() => neardup.simhash("t", { shingleSize: 2.5 }), /neardup\.simhash: option shingleSize must be an integer 1..64, not 2.5/);
  assert.throws(() => neardup.simhash("t", { shingleSize: 65 }), /shingle size must be between 1 and 64, got 65/);
  assert.throws(() => neardup.simhash("t", "shingles"), /the options must be an object, not a string/);
  assert.throws(() => neardup.sketch("t", { threshold: 0 }), /threshold/);
  assert.throws(() => neardup.sketch("t", { threshold: "0.8" }), /neardup\.sketch: option threshold must be a number in \(0, 1\], not "0.8"/);
  assert.throws(() => neardup.sketch("t", { bands: 4 }), /unknown option 'bands'/);
  assert.throws(() => new neardup.Signer("method=simhash mode=shingles:word:3 color=blue"), /unknown setting 'color'/);
  assert.throws(() => new neardup.Signer("fingerprint=1"), /must start with method=/);
  assert.throws(() => new neardup.Signer("method=accurate fingerprint=9"), /fingerprint version 9/);
});

test("bad signatures", () => {
  const s = neardup.sketch("a text");
  assert.throws(() => neardup.estimateJaccard(s.sketch, s.sketch.slice(1)), /b has 131 bytes; a sketch has 132/);
  assert.throws(() => neardup.estimateJaccard("zz", s.sketch), /a must be 264 hex digits/);
  assert.throws(() => neardup.estimateJaccard(s.sketch, [1, 2]), /b must be a Uint8Array or hex, not an array/);
  assert.throws(() => neardup.hammingDistance("123", "0000000000000000"), /a must be 16 hex digits or a BigInt, not "123"/);
  assert.throws(() => neardup.hammingDistance(1n << 64n, 0n), /a is not a 64-bit value/);
  assert.throws(() => neardup.hammingDistance(-1n, 0n), RangeError);
  const simhashSigner = new neardup.Signer({ method: "simhash" });
  assert.throws(() => simhashSigner.estimateJaccard(s.sketch, s.sketch), /a SimHash signer has no sketches/);
});

test("Chinese word segmentation is unavailable, with a message that says what to use", () => {
  assert.throws(() => neardup.simhash("我们的网站提供最新的新闻报道"),
                /jieba's dictionary is not in the WebAssembly build.*use lang en/);
  assert.throws(() => new neardup.Signer({ method: "simhash", mode: "keywords" }), /jieba's dictionary/);
  assert.match(neardup.simhash("我们的网站提供最新的新闻报道", { lang: "en" }), /^[0-9a-f]{16}$/);
  assert.equal(neardup.sketch("我们的网站提供最新的新闻报道").empty, false);
});

test("empty, blank and symbol-only texts are empty signatures", () => {
  for (const text of ["", "   \n\t", "!!! --- ???", "\u200b\u00ad"]) {
    assert.equal(neardup.sketch(text).empty, true, JSON.stringify(text));
    assert.equal(neardup.simhash(text), "0000000000000000");
  }
});

test("a disposed signer refuses to sign", () => {
  const signer = new neardup.Signer();
  signer.dispose();
  assert.throws(() => signer.sign("text"), /the signer was disposed/);
  signer.dispose();  // twice is harmless
});

test("huge texts: signed when they fit, refused with RangeError when they do not", () => {
  const big = "word ".repeat(4 * 1024 * 1024);  // 20 MiB
  assert.match(neardup.simhash(big), /^[0-9a-f]{16}$/);
  assert.throws(() => neardup.simhash({ length: 1 }), TypeError);
  const tooLong = "x".repeat(128 * 1024 * 1024 + 1);
  assert.throws(() => neardup.simhash(tooLong), { name: "RangeError", message: /longer than the limit/ });
});

test("load() rejects what is not a module", async () => {
  await assert.rejects(neardup.load({ wasm: 42 }), /options.wasm must be a URL, a string or bytes, not a number/);
  await assert.rejects(neardup.load({ wasm: new Uint8Array([0, 97, 115, 109, 9, 9, 9, 9]) }));
  await assert.rejects(neardup.load({ wasm: pathToFileURL(join(jsDir, "missing.wasm")) }), /ENOENT/);
  // A failed load keeps nothing half-made: loading the real module again works.
  await neardup.load({ wasm: readFileSync(join(jsDir, "neardup_wasm.wasm")) });
  assert.equal(neardup.simhash("a text that signs before and after the bad input"), good);
});

test("the module still signs after all of the above", () => {
  assert.equal(neardup.simhash("a text that signs before and after the bad input"), good);
});
