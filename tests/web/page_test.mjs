// The web page of `neardup serve` end to end, in Debian's headless Chromium driven by
// playwright-core: a server on a free loopback port; the page signs typed text itself with the
// WebAssembly module the server serves (no server call), and its signature is the one the server
// stores; a text stored, a near-duplicate checked by a signature query (the verdict, the match row,
// the 64 fingerprint bits), two texts compared side by side (shared passages marked, differing bits
// outlined), the stats view; a SimHash server (its signatures, a signature query, a Chinese text the
// page cannot segment, signed by the server instead); a page without the module (the server signs); a
// server with a token (the page signs once it is given); a screenshot of the check view.
// Usage: node page_test.mjs PATH/TO/neardup SCREENSHOT.png
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

const [neardup, screenshot] = process.argv.slice(2);
const work = mkdtempSync(join(tmpdir(), "neardup-web-"));
const servers = [];
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

// A server on a free loopback port: its base URL once it is ready.
function startServer(name, args) {
  const server = spawn(neardup, ["serve", "--data", join(work, name), "--listen", "127.0.0.1:0", ...args],
                       { stdio: ["ignore", "ignore", "pipe"] });
  servers.push(server);
  return new Promise((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => reject(new Error("the server was not ready in 20 s: " + seen)), 20000);
    server.stderr.on("data", (chunk) => {
      seen += chunk;
      const port = seen.match(/listening on http:\/\/127\.0\.0\.1:(\d+)\//);
      if (port && seen.includes("ready:")) { clearTimeout(timer); resolve(`http://127.0.0.1:${port[1]}/`); }
    });
    server.on("exit", (code) => reject(new Error(`the server ended (${code}): ${seen}`)));
  });
}

async function getJson(url) {
  const response = await fetch(url, { signal: AbortSignal.timeout(5000) });
  assert.equal(response.status, 200, `${url} answered ${response.status}`);
  return response.json();
}

// A page of the server at `url`, once it knows who signs ("page" or "server"), with the log of the
// requests it makes to the API.
async function openPage(url, signing, setup) {
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  page.setDefaultTimeout(10000);
  if (setup) await setup(page);
  const requests = [];
  page.on("request", (request) => {
    const path = new URL(request.url()).pathname;
    if (path.startsWith("/v1/")) {
      requests.push({ method: request.method(), path, search: new URL(request.url()).search,
                      body: request.postData() ? JSON.parse(request.postData()) : undefined });
    }
  });
  await page.goto(url);
  await page.waitForSelector(`#signing[data-mode=${signing}]`);
  return { page, requests };
}

// Types `text` into the check area and waits until the signature of this text is shown.
async function type(page, text) {
  await page.fill("#text", text);  // hides the verdict and marks the signature pending at once
  await page.waitForSelector("#signature[data-state=current]");
}

// Clicks a check button and waits for this check's verdict (typing hid the one before).
async function clickCheck(page, button) {
  await page.click(button);
  await page.waitForSelector("#result:not([hidden])");
}

const shown = (page) => page.$eval("#signature", (box) => ({ ...box.dataset }));

try {
  writeFileSync(join(work, "token.txt"), "s3cret\n");
  const [url, simhashUrl, tokenUrl] = await Promise.all([
    startServer("store", ["--store-text"]), startServer("simhash", ["--method", "simhash"]),
    startServer("token", ["--token-file", join(work, "token.txt")])]);
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  const original = "Redis Cluster spreads the keys of a database over many nodes, with replicas " +
                   "and automatic failover when a master goes down.";
  const near = original.replace("automatic failover", "automatic fail-over") + "!";
  let page, requests;

  await check("signatures computed in the page", async () => {
    ({ page, requests } = await openPage(url, "page"));
    assert.equal(await page.textContent("#signing"), "signatures: computed in this page (WebAssembly)");
  });
  await check("typed text signed in the page, at once", async () => {
    requests.length = 0;
    await type(page, original);
    assert.deepEqual(requests, [], "the page called the server to sign");
    const signature = await shown(page);
    assert.equal(signature.source, "page");
    assert.match(signature.simhash, /^[0-9a-f]{16}$/);
    assert.match(signature.sketch, /^[0-9a-f]+$/);
    assert.match(signature.bands, /^[0-9a-f]+$/);
    assert.equal(await page.textContent("#simhash"), signature.simhash);
    assert.equal(await page.locator("#bits span").count(), 64);
    assert.equal(await page.textContent("#sketch-size"), String(signature.sketch.length / 2));
    assert.equal(await page.textContent("#band-count"), String(signature.bands.length / 8));
    assert.ok((await page.textContent("#band-keys")).startsWith(signature.bands.slice(0, 8) + " "));
    assert.match(await page.textContent("#sign-source"), /^computed in this page in \d+\.\d+ ms$/);
    assert.ok(await page.isHidden("#result"));
  });
  await check("store a new text: the page's signature is the server's", async () => {
    await page.fill("#doc-id", "redis-post");
    requests.length = 0;
    await clickCheck(page, "#check-store");
    assert.equal(await page.textContent("#verdict"), "new");
    assert.equal(await page.textContent("#verdict-text"), "stored as redis-post");
    assert.deepEqual(requests.map((r) => r.method + " " + r.path), ["POST /v1/documents"]);
    assert.equal(requests[0].body.text, original, "check and store sends the text");
    const stored = await getJson(url + "v1/documents/redis-post");
    const signature = await shown(page);
    assert.equal(signature.simhash, stored.simhash);
    assert.equal(signature.sketch, stored.sketch);
    assert.equal(signature.bands, stored.bands);
    assert.equal(signature.empty, String(stored.empty));
    assert.equal(await page.locator("#bits span").count(), 64);
  });
  await check("check a near-duplicate by its signature", async () => {
    await type(page, near);
    await page.fill("#doc-id", "copy");
    requests.length = 0;
    await clickCheck(page, "#check-only");
    assert.equal(await page.textContent("#verdict"), "near-duplicate");
    const cells = await page.locator("#matches tbody td").allTextContents();
    assert.equal(cells[0], "redis-post");
    assert.match(cells[1], /^\d+\.\d%$/);
    assert.equal(await page.textContent("#verdict-text"), "not stored");
    const query = requests.find((r) => r.path === "/v1/query");
    assert.ok(query, "no signature query: " + JSON.stringify(requests.map((r) => r.path)));
    assert.deepEqual(Object.keys(query.body).sort(), ["bands", "sketch"]);
    const signature = await shown(page);
    assert.equal(query.body.sketch, signature.sketch);
    assert.equal(query.body.bands, signature.bands);
    assert.ok(!requests.some((r) => r.body && "text" in r.body), "a text was sent");
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
  await check("screenshot", async () => {
    await page.click("nav button[data-tab=check]");
    await type(page, near);
    await page.fill("#doc-id", "copy");
    await clickCheck(page, "#check-only");
    assert.equal(await page.textContent("#check-error"), "");
    await page.screenshot({ path: screenshot, fullPage: true });
  });

  // Checks of the server's answers shown by the page, whoever signs (the module is kept out, so
  // that they run in a build without it too).
  const withoutModule = (p) => p.route("**/js/neardup.mjs", (route) => route.fulfill(
    { status: 404, contentType: "application/json", body: '{"error":"not_found","message":"no module"}' }));
  await check("texts without features are not comparable", async () => {
    const { page: plain } = await openPage(url, "server", withoutModule);
    await plain.click("nav button[data-tab=compare]");
    await plain.fill("#a", "");
    await plain.fill("#b", "!!! ???");
    await plain.click("#compare-go");
    await plain.waitForSelector("#compare-result:not([hidden])");
    assert.equal(await plain.textContent("#compare-verdict"), "not comparable");
    const summary = await plain.textContent("#compare-summary");
    assert.match(summary, /a text without features is never a near-duplicate/);
    assert.doesNotMatch(summary, /%|bands shared/);
    assert.equal(await plain.textContent("#distance"), "none (not comparable)");
    await plain.close();
  });
  await check("the stats view refreshes in one loop however often its tab is clicked", async () => {
    const { page: plain, requests: calls } = await openPage(url, "server", withoutModule);
    for (let i = 0; i < 5; ++i) await plain.click("nav button[data-tab=stats]");
    await plain.waitForFunction(() => document.querySelectorAll("#stats-table tr").length > 5);
    await plain.waitForTimeout(500);
    const before = calls.filter((r) => r.path === "/v1/stats").length;
    await plain.waitForTimeout(4100);  // one loop: 2 refreshes (five loops: 10)
    const refreshes = calls.filter((r) => r.path === "/v1/stats").length - before;
    assert.ok(refreshes >= 1 && refreshes <= 3, `${refreshes} refreshes in 4.1 s`);
    await plain.close();
  });

  await check("without the module the server signs", async () => {
    const { page: plain, requests: calls } = await openPage(url, "server", (p) => p.route(
      "**/js/neardup.mjs", (route) => route.fulfill({ status: 404, contentType: "application/json",
                                                      body: '{"error":"not_found","message":"no module"}' })));
    assert.equal(await plain.textContent("#signing"), "signatures: computed by the server");
    await plain.fill("#text", near);
    await clickCheck(plain, "#check-only");
    assert.equal(await plain.textContent("#verdict"), "near-duplicate");
    assert.equal((await plain.locator("#matches tbody td").allTextContents())[0], "redis-post");
    assert.ok(calls.some((r) => r.path === "/v1/documents" && r.search === "?insert=false" && r.body.text === near));
    const signature = await shown(plain);
    assert.equal(signature.source, "server");
    assert.equal(signature.simhash, (await shown(page)).simhash);
    assert.equal(await plain.textContent("#sign-source"), "computed by the server");
    assert.ok(await plain.isHidden("#sketch-line"));
    await plain.close();
  });

  await check("a SimHash server: the page's simhash is the server's", async () => {
    const { page: sim, requests: calls } = await openPage(simhashUrl, "page");
    const text = "The quick brown fox jumps over the lazy dog while the farmer watches from the old barn. " +
      "Later that evening the farmer walks to the village, buys bread and cheese at the market, talks " +
      "with the miller about the coming harvest and the price of grain, and returns home before dark to " +
      "feed the chickens, mend the fence by the river and write a letter to his sister in the city. In " +
      "the morning the fog lifts slowly from the fields, the church bell rings seven times, and the " +
      "children run along the muddy lane to the school house where the teacher waits with chalk, maps " +
      "of distant countries and a stack of old books that smell of dust and rain.";
    calls.length = 0;
    await type(sim, text);
    assert.deepEqual(calls, []);
    assert.ok(await sim.isHidden("#sketch-line"));
    await sim.fill("#doc-id", "fox");
    await clickCheck(sim, "#check-store");
    assert.equal(await sim.textContent("#verdict-text"), "stored as fox");
    const stored = await getJson(simhashUrl + "v1/documents/fox");
    assert.equal((await shown(sim)).simhash, stored.simhash);
    assert.equal((await shown(sim)).sketch, "");

    await type(sim, text.replace("his sister", "his brother"));  // 3 bits apart
    calls.length = 0;
    await clickCheck(sim, "#check-only");
    assert.equal(await sim.textContent("#verdict"), "near-duplicate");
    assert.match((await sim.locator("#matches tbody td").allTextContents())[1], /^\d bits apart$/);
    const query = calls.find((r) => r.path === "/v1/query");
    assert.deepEqual(query.body, { simhash: (await shown(sim)).simhash });

    // Word shingles of Chinese need jieba's dictionary, which the module has not: the page says
    // so, and Check asks the server with the text.
    await sim.fill("#text", "今天天气很好，我们一起去公园散步吧");
    await sim.waitForSelector("#signature[data-state=error]", { state: "attached" });
    assert.match(await sim.textContent("#sign-note"), /Chinese segmentation/);
    calls.length = 0;
    await clickCheck(sim, "#check-only");
    assert.equal(await sim.textContent("#verdict"), "new");
    assert.ok(calls.some((r) => r.path === "/v1/documents" && r.search === "?insert=false"));
    assert.equal((await shown(sim)).source, "server");
    assert.ok(await sim.isVisible("#sign-note"));
    await sim.close();
  });

  await check("with a token the page signs once it is given", async () => {
    const { page: guarded } = await openPage(tokenUrl, "server");  // GET /v1/stats: 401
    assert.ok(await guarded.isVisible("#token-row"));
    await guarded.fill("#token", "s3cret");
    await guarded.press("#token", "Enter");  // a change event
    await guarded.waitForSelector("#signing[data-mode=page]");
    await type(guarded, original);
    await clickCheck(guarded, "#check-only");
    assert.equal(await guarded.textContent("#verdict"), "new");
    await guarded.close();
  });
} catch (error) {
  ++failures;
  console.log(`FAIL: ${error.message}`);
} finally {
  if (browser) await browser.close();
  for (const server of servers) {
    server.kill("SIGTERM");
    await new Promise((resolve) => server.exitCode !== null ? resolve() : server.on("exit", resolve));
  }
  rmSync(work, { recursive: true, force: true });
}
console.log(failures === 0 ? "web page: all checks passed" : `web page: ${failures} failed`);
process.exit(failures === 0 ? 0 : 1);
