// Signing throughput of the WebAssembly build in Node, one thread, beside the native build's
// (bench/sign_throughput.cc) on the same documents, in alternating rounds; prints the medians and
// their ratio (bench/suites/wasm.sh).
// Usage: node sign_bench.mjs PACKAGE_DIR SIGN_THROUGHPUT FILE ROUNDS SETTINGS_LINE...
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [packageDir, nativeProgram, file, roundsText, ...settingsLines] = process.argv.slice(2);
const rounds = Number(roundsText);
const neardup = await import(pathToFileURL(join(packageDir, "neardup.mjs")).href);
await neardup.load();
const documents = readFileSync(file, "utf8").split("\n");
if (documents.at(-1) === "") documents.pop();
const bytes = documents.reduce((sum, d) => sum + Buffer.byteLength(d), 0);
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length % 2 ? sorted[(sorted.length - 1) / 2]
    : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
};

console.log(`${documents.length} documents, ${(bytes / 1e6).toFixed(1)} MB, ${rounds} rounds each`);
console.log("| settings | native MB/s | WebAssembly MB/s | ratio |");
console.log("|---|---|---|---|");
for (const line of settingsLines) {
  const signer = new neardup.Signer(line);
  const native = [], wasm = [];
  for (let round = 0; round < rounds; ++round) {
    // The native program signs twice and the second round counts (the first warms its caches).
    const out = execFileSync(nativeProgram, [line, file, "2"], { encoding: "utf8" }).trim().split("\n");
    native.push(Number(out.at(-1).split(" ")[0]));
    for (let pass = 0; pass < 2; ++pass) {
      const start = process.hrtime.bigint();
      let checksum = 0;
      for (const document of documents) checksum += signer.sign(document).simhash.length;
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      if (pass === 1) wasm.push(bytes / seconds / 1e6);
      if (checksum !== 16 * documents.length) throw new Error("bad signatures");
    }
  }
  const n = median(native), w = median(wasm);
  console.log(`| ${signer.settings.split(" ").slice(0, 2).join(" ")} | ${n.toFixed(1)} | ${w.toFixed(1)} | ${(w / n).toFixed(2)} |`);
  signer.dispose();
}
