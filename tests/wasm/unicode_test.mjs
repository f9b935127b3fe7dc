// Every Unicode code point: the WebAssembly build's NFKC_Casefold and token classes (from the
// generated tables) equal the native build's (ICU), line for line (wasm/unicode_dump.h).
// NEARDUP_UNICODE_DUMP is the native program that prints the native lines.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { test } from "node:test";

import { loadNeardup } from "./common.mjs";

const neardup = await loadNeardup();

test("all code points agree with the native build", () => {
  const native = execFileSync(process.env.NEARDUP_UNICODE_DUMP, ["0", String(0x10ffff)],
                              { maxBuffer: 1 << 30, encoding: "utf8" });
  let mine = "";
  for (let first = 0; first <= 0x10ffff; first += 0x10000) {
    mine += neardup.unicodeDump(first, first + 0xffff);
  }
  const expected = native.split("\n"), actual = mine.split("\n");
  assert.equal(actual.length, expected.length, "line count");
  assert.equal(expected.length, 0x110000 - 0x800 + 1, "every code point but the surrogates, once");
  const differences = [];
  for (let i = 0; i < expected.length && differences.length < 20; ++i) {
    if (expected[i] !== actual[i]) differences.push(`native ${expected[i]} | wasm ${actual[i]}`);
  }
  assert.deepEqual(differences, [], differences.join("\n"));
  // The walk is not vacuous: code points that normalise to something else, and every token kind.
  const changed = expected.filter((line) => {
    const [cp, normalized] = line.split("\t");
    return normalized !== undefined && normalized !== "" && parseInt(cp, 16) >= 0x80 &&
           normalized !== Buffer.from(String.fromCodePoint(parseInt(cp, 16))).toString("hex");
  });
  assert.ok(changed.length > 5000, `${changed.length} code points change under NFKC_Casefold`);
  for (const kind of ["w", "n", "c"]) {
    assert.ok(expected.some((line) => line.split("\t")[2] === kind), `no code point of kind ${kind}`);
  }
});
