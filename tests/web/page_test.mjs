// The web page of `neardup serve` end to end, in Debian's headless Chromium driven by
// playwright-core: a server on a free loopback port, a text stored, a near-duplicate checked (the
// verdict, the match row, the 64 fingerprint bits), two texts compared side by side (shared passages
// marked, differing bits outlined), the stats view; then a screenshot.
// Usage: node page_test.mjs PATH/TO/neardup SCREENSHOT.png
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

const [neardup, screenshot] = process.argv.slice(2);
const work = mkdtempSync(join(tmpdir(), "neardup-web-"));
const server = spawn(neardup, ["serve", "--data", join(work, "store"), "--listen", "127.0.0.1:0",
                               "--store-text"],
                     { stdio: ["ignore", "ignore", "pipe"] });
let failures = 0;
let browser;

async function check(name, fn) {
  try {
    await fn();
  } catch (error) {
    ++failures;
    console.log(`FAIL ${name}: ${error.message}`);
  }
}

try {
  const url = await new Promise((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => reject(new Error("the server was not ready in 20 s: " + seen)), 20000);
    server.stderr.on("data", (chunk) => {
      seen += chunk;
      const port = seen.match(/listening on http:\/\/127\.0\.0\.1:(\d+)\//);
      if (port && seen.includes("ready:")) { clearTimeout(timer); resolve(`http://127.0.0.1:${port[1]}/`); }
    });
    server.on("exit", (code) => reject(new Error(`the server ended (${code}): ${seen}`)));
  });
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  await page.goto(url);
  const original = "Redis Cluster spreads the keys of a database over many nodes, with replicas " +
                   "and automatic failover when a master goes down.";
  const near = original.replace("automatic failover", "automatic fail-over") + "!";

  await check("store a new text", async () => {
    await page.fill("#text", original);
    await page.fill("#doc-id", "redis-post");
    await page.click("#check-store");
    await page.waitForSelector("#result:not([hidden])");
    assert.equal(await page.textContent("#verdict"), "new");
    assert.equal(await page.textContent("#verdict-text"), "stored as redis-post");
    assert.equal(await page.locator("#bits span").count(), 64);
    assert.match(await page.textContent("#simhash"), /^[0-9a-f]{16}$/);
  });
  await check("check a near-duplicate", async () => {
    await page.fill("#text", near);
    await page.fill("#doc-id", "copy");
    await page.click("#check-only");
    await page.waitForFunction(() => document.querySelector("#verdict").textContent === "near-duplicate");
    const cells = await page.locator("#matches tbody td").allTextContents();
    assert.equal(cells[0], "redis-post");
    assert.match(cells[1], /^\d+\.\d%$/);
    assert.equal(await page.textContent("#verdict-text"), "not stored");
  });
  await check("the stored match side by side", async () => {
    await page.click("#matches .side-by-side");
    await page.waitForSelector("#compare-result:not([hidden])");
    assert.equal(await page.inputValue("#b"), original);
    assert.equal(await page.textContent("#compare-verdict"), "near-duplicates");
    await page.click("nav button[data-tab=check]");
  });
  await check("an error is shown", async () => {
    await page.fill("#doc-id", "redis-post");
    await page.click("#check-store");  // the id is taken: 409
    await page.waitForFunction(() => document.querySelector("#check-error").textContent !== "");
    assert.equal(await page.textContent("#check-error"), "id 'redis-post' is already stored");
  });
  await check("compare side by side", async () => {
    await page.click("nav button[data-tab=compare]");
    await page.fill("#a", original);
    await page.fill("#b", near);
    await page.click("#compare-go");
    // The result of the earlier comparison is still shown: wait for this one's texts.
    await page.waitForFunction((b) => document.querySelector("#b-view").textContent === b, near);
    assert.equal(await page.textContent("#compare-verdict"), "near-duplicates");
    assert.ok(await page.locator("#a-view mark").count() > 0, "no shared passage marked");
    assert.ok((await page.locator("#b-view .only").allTextContents()).join("").includes("-"),
              "the inserted hyphen is not shown as B's own");
    assert.equal(await page.locator("#a-bits span").count(), 64);
  });
  await check("stats view", async () => {
    await page.click("nav button[data-tab=stats]");
    await page.waitForFunction(() => document.querySelectorAll("#stats-table tr").length > 5);
    const cells = await page.locator("#stats-table td").allTextContents();
    assert.equal(cells[cells.indexOf("documents") + 1], "1");
  });
  await page.click("nav button[data-tab=compare]");
  await page.screenshot({ path: screenshot, fullPage: true });
} catch (error) {
  ++failures;
  console.log(`FAIL: ${error.message}`);
} finally {
  if (browser) await browser.close();
  server.kill("SIGTERM");
  await new Promise((resolve) => server.exitCode !== null ? resolve() : server.on("exit", resolve));
  rmSync(work, { recursive: true, force: true });
}
console.log(failures === 0 ? "web page: all checks passed" : `web page: ${failures} failed`);
process.exit(failures === 0 ? 0 : 1);
