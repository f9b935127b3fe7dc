// The fingerprint and sketch known-answer vectors (tests/data/*_vectors.tsv, the native library's
// golden values) recomputed by the WebAssembly build, for every mode. The module holds no Chinese
// dictionary: a vector whose mode segments Chinese (keywords; terms and word shingles of a text
// with a CJK run) must fail with the message that says so, and every other vector must be equal.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { decode, hasCjk, katTexts, loadNeardup, sourceDir } from "./common.mjs";

const neardup = await loadNeardup();
const texts = katTexts();

// "mode[:unit:n][:raw][:distinct][:t2s]" or "keywords[:kN]" (tests/kat_modes.h) as options.
function optionsOf(spec) {
  const parts = spec.split(":");
  const options = { method: "simhash" };
  while (parts.length > 1 && ["raw", "distinct", "t2s"].includes(parts.at(-1))) {
    const flag = parts.pop();
    if (flag === "raw") options.normalize = false;
    if (flag === "distinct") options.weighting = "distinct";
    if (flag === "t2s") options.fold = "t2s";
  }
  if (parts.length === 2 && parts[1].startsWith("k")) options.keywords = Number(parts.pop().slice(1));
  options.mode = parts[0];
  if (parts.length === 3) {
    options.shingleUnit = parts[1];
    options.shingleSize = Number(parts[2]);
  }
  return options;
}

function needsDictionary(options, text) {
  if (options.mode === "keywords") return true;
  const segmented = options.mode === "terms" || (options.mode === "shingles" && options.shingleUnit === "word");
  return segmented && hasCjk(text.normalize("NFKC"));
}

test("every SimHash vector of every mode", () => {
  const lines = readFileSync(join(sourceDir, "tests/data/fingerprint_vectors.tsv"), "utf8").split("\n");
  const modes = new Set();
  let equal = 0, unavailable = 0;
  for (const line of lines) {
    if (line === "" || line.startsWith("#")) continue;
    const [spec, number, expected] = line.split("\t");
    modes.add(spec);
    const options = optionsOf(spec);
    const text = decode(texts.get(Number(number)));
    if (needsDictionary(options, text)) {
      // keywords mode needs the dictionary at once; the others on the first Chinese text.
      assert.throws(() => new neardup.Signer(options).sign(text),
                    /jieba's dictionary is not in the WebAssembly build/, `${spec} on line ${number}`);
      ++unavailable;
    } else {
      const signer = new neardup.Signer(options);
      assert.equal(signer.sign(text).simhash, expected, `${spec} on line ${number}`);
      signer.dispose();
      ++equal;
    }
  }
  assert.ok(modes.size >= 15, `only ${modes.size} modes in the vectors`);
  assert.ok(equal >= 150, `only ${equal} vectors compared`);
  console.log(`# ${equal} SimHash vectors equal, ${unavailable} need the Chinese dictionary`);
});

test("every sketch vector", () => {
  const lines = readFileSync(join(sourceDir, "tests/data/sketch_vectors.tsv"), "utf8").split("\n");
  let count = 0;
  for (const line of lines) {
    if (line === "" || line.startsWith("#")) continue;
    const [number, sketchHex, bandsHex] = line.split("\t");
    const signature = neardup.sketch(decode(texts.get(Number(number))));
    assert.equal(signature.sketchHex, sketchHex, `sketch of line ${number}`);
    assert.equal(signature.bandsHex, bandsHex, `band keys of line ${number}`);
    ++count;
  }
  assert.ok(count >= 15);
});

test("the simhash() and sketch() shortcuts sign as a Signer of the same settings", () => {
  const text = decode(texts.get(2));
  const signer = new neardup.Signer({ method: "simhash", shingleUnit: "char", shingleSize: 5 });
  assert.equal(neardup.simhash(text, { shingleUnit: "char", shingleSize: 5 }), signer.sign(text).simhash);
  assert.equal(signer.settings,
               "method=simhash mode=shingles:char:5 weighting=occurrences lang=auto fold=none k=3 fingerprint=1");
  const accurate = new neardup.Signer();
  assert.equal(accurate.settings, "method=accurate mode=shingles:char:5 weighting=distinct lang=auto " +
               "fold=t2s threshold=0.8 sketch=1024x1 bands=20x6 fingerprint=1 sketch_version=1");
  assert.deepEqual(accurate.sign(text).sketch, neardup.sketch(text).sketch);
});
