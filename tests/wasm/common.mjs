// Shared by the Node tests of the WebAssembly build: the package under test, the native CLI, and the
// texts both sign. Environment (set by CTest, tests/CMakeLists.txt): NEARDUP_JS_DIR (the built npm
// package), NEARDUP_CLI (the native `neardup`), NEARDUP_SOURCE_DIR.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

export const jsDir = process.env.NEARDUP_JS_DIR;
export const cli = process.env.NEARDUP_CLI;
export const sourceDir = process.env.NEARDUP_SOURCE_DIR;
if (!jsDir || !cli || !sourceDir) {
  throw new Error("set NEARDUP_JS_DIR, NEARDUP_CLI and NEARDUP_SOURCE_DIR (CTest does)");
}

export async function loadNeardup() {
  const neardup = await import(pathToFileURL(join(jsDir, "neardup.mjs")).href);
  await neardup.load();
  return neardup;
}

// tests/data/kat_texts.txt: line number -> bytes (\xNN is a byte, \\ a backslash; # lines skipped).
export function katTexts() {
  const texts = new Map();
  const lines = readFileSync(join(sourceDir, "tests/data/kat_texts.txt"), "utf8").split("\n");
  if (lines.at(-1) === "") lines.pop();
  lines.forEach((line, index) => {
    if (line.startsWith("#")) return;
    const bytes = [];
    const raw = Buffer.from(line, "utf8");
    for (let i = 0; i < raw.length; ++i) {
      if (raw[i] === 0x5c && raw[i + 1] === 0x78) {  // \xNN
        bytes.push(parseInt(raw.subarray(i + 2, i + 4).toString(), 16));
        i += 3;
      } else if (raw[i] === 0x5c && raw[i + 1] === 0x5c) {
        bytes.push(0x5c);
        i += 1;
      } else {
        bytes.push(raw[i]);
      }
    }
    texts.set(index + 1, Uint8Array.from(bytes));
  });
  return texts;
}

// Bytes as a JavaScript string: each invalid UTF-8 sequence becomes U+FFFD, as the library's
// default policy (replace) does with the bytes themselves.
export function decode(bytes) {
  return new TextDecoder("utf-8", { fatal: false }).decode(bytes);
}

// Runs the native CLI on documents given as JSON Lines; returns its JSON output lines as objects.
export function nativeSign(texts, args) {
  const dir = mkdtempSync(join(tmpdir(), "neardup-wasm-"));
  try {
    const input = join(dir, "in.jsonl");
    writeFileSync(input, texts.map((text, i) => JSON.stringify({ id: String(i), text })).join("\n") + "\n");
    const out = execFileSync(cli, ["hash", "--jsonl", "--json", ...args, input],
                             { maxBuffer: 1 << 30, encoding: "utf8" });
    return out.trim().split("\n").filter((line) => line !== "").map((line) => JSON.parse(line));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// Real text: paragraphs of Debian's LibreOffice help (English and Chinese) and the quality
// collections' classical Chinese (Traditional and Simplified), with blank and symbol-only lines.
export function realTexts(limit = 1500) {
  const dir = mkdtempSync(join(tmpdir(), "neardup-wasm-"));
  const texts = [];
  try {
    for (const lang of ["en-US", "zh-CN"]) {
      const out = join(dir, `${lang}.txt`);
      execFileSync("/usr/bin/python3", [join(sourceDir, "bench/corpus/help_text.py"), lang, out,
                                        "--per", "paragraph", "--limit", String(limit)],
                   { stdio: "ignore" });
      texts.push(...readFileSync(out, "utf8").split("\n").filter((line) => line !== ""));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  for (const name of ["short", "long"]) {
    const path = join(sourceDir, `tests/data/quality/${name}.jsonl`);
    for (const line of readFileSync(path, "utf8").split("\n")) {
      if (line !== "") texts.push(JSON.parse(line).text);
    }
  }
  texts.push("", "   ", "!!! ??? ...", "—", "ＦＵＬＬ－ＷＩＤＴＨ １２３", "e\u0301\u0323 \u1100\u1161\u11a8",
             "\u00ad\u200b\u2060zero\u200dwidth", "ﬁﬂ ǅ ẞ ß Σ ς", "😀 emoji 👍🏽 and 𝐛𝐨𝐥𝐝");
  return texts;
}

// True when `text` has a run the tokeniser gives to jieba (Han, Hiragana, Katakana).
export function hasCjk(text) {
  return /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]/u.test(text);
}
