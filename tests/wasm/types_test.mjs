// The JavaScript package's TypeScript types (js/neardup.d.ts) compile under tsc --strict, and
// types_check.ts uses every declaration as a TypeScript user would. tsc comes from tests/web
// (npm ci by scripts/install-deps.sh).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { jsDir, sourceDir } from "./common.mjs";

test("the package's types compile and reject wrong uses", () => {
  const dir = mkdtempSync(join(tmpdir(), "neardup-types-"));
  try {
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({
      compilerOptions: {
        strict: true, noEmit: true, target: "es2022", module: "es2022", moduleResolution: "bundler",
        lib: ["es2022", "dom"], types: [], baseUrl: ".", paths: { neardup: [join(jsDir, "neardup.d.ts")] },
      },
      files: [join(sourceDir, "tests/wasm/types_check.ts")],
    }));
    const tsc = join(sourceDir, "tests/web/node_modules/typescript/bin/tsc");
    let output = "";
    try {
      execFileSync(process.execPath, [tsc, "-p", join(dir, "tsconfig.json")], { encoding: "utf8" });
    } catch (error) {
      output = (error.stdout ?? "") + (error.stderr ?? "") || error.message;
    }
    assert.equal(output, "", output);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
