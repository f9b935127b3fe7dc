// neardup in the browser and in Node: the signatures of the native library, computed by its own C++
// source compiled to WebAssembly (neardup_wasm.wasm). Strings in; hex and Uint8Array out, in the
// formats of the command line (`neardup hash`, `neardup hash --sketch`).
//
//   import * as neardup from "neardup";
//   await neardup.load();
//   neardup.simhash("some text");                 // "ea8754214090b9d6", as `neardup hash`
//   const s = neardup.sketch("some text");        // the default method's sketch and band keys
//   neardup.estimateJaccard(s.sketch, other.sketch);
//
// Nothing is fetched but the module's own .wasm file (or the bytes given to load()).
import createNeardupModule from "./neardup_wasm.mjs";

// Texts are copied into the module's memory as UTF-8; longer texts are refused (the 32-bit module
// addresses at most 2 GiB, and a text needs up to 3 bytes per UTF-16 code unit there).
const MAX_TEXT_UNITS = 128 * 1024 * 1024;

const SIMHASH_OPTIONS = {
  mode: ["shingles", "terms", "keywords"],
  lang: ["auto", "zh", "en"],
  keywords: "an integer 0..100000",
  shingleUnit: ["word", "char"],
  shingleSize: "an integer 1..64",
  weighting: ["occurrences", "distinct"],
  fold: ["none", "t2s"],
  normalize: "a boolean",
  k: "an integer 0..7",
};
const SKETCH_OPTIONS = { threshold: "a number in (0, 1]" };

let wasm = null;        // the instantiated module
let failure = null;     // why the module stopped working (it aborted), until load() again
const signers = new Map();  // settings line -> Signer, for simhash() and sketch()

function fail(where, message, Kind = Error) {
  return new Kind(`neardup.${where}: ${message}`);
}

function module_(where) {
  if (failure) throw fail(where, `the WebAssembly module stopped (${failure}); call load() again`);
  if (!wasm) throw fail(where, "the WebAssembly module is not loaded: await neardup.load() first");
  return wasm;
}

// Runs fn(module); an abort of the module (out of memory) is reported once and remembered.
function call(where, fn) {
  const m = module_(where);
  try {
    return fn(m);
  } catch (error) {
    if (error instanceof WebAssembly.RuntimeError) {
      failure = error.message;
      signers.clear();
      throw fail(where, `the WebAssembly module stopped (${error.message}); call load() again`);
    }
    throw error;
  }
}

function lastError(m) {
  return utf8ToString(m, m._nd_last_error());
}

function utf8ToString(m, pointer) {
  const heap = m.HEAPU8;
  let end = pointer;
  while (heap[end] !== 0) ++end;
  return decoder.decode(heap.subarray(pointer, end));
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
// The module's input buffer, reused by every call (grown when a text needs more; a buffer grown
// past KEEP_BYTES is given back after the call).
const KEEP_BYTES = 4 * 1024 * 1024;
let scratch = { module: null, pointer: 0, capacity: 0 };

// Checks `text` and copies it into the module as UTF-8: [pointer, bytes], valid until the next call.
function copyText(m, where, text) {
  if (typeof text !== "string") {
    throw fail(where, `the text must be a string, not ${describe(text)}`, TypeError);
  }
  if (!(text.isWellFormed ? text.isWellFormed() : !/\p{Surrogate}/u.test(text))) {
    const lone = text.search(/\p{Surrogate}/u);
    throw fail(where, `the text has a lone surrogate (U+${text.charCodeAt(lone).toString(16)
      .toUpperCase()}) at UTF-16 index ${lone}: it is not Unicode text`, TypeError);
  }
  if (text.length > MAX_TEXT_UNITS) {
    throw fail(where, `the text of ${text.length} UTF-16 code units is longer than the limit of ` +
               `${MAX_TEXT_UNITS}`, RangeError);
  }
  const needed = text.length * 3 + 1;
  if (scratch.module !== m || scratch.capacity < needed) {
    if (scratch.module === m && scratch.pointer) m._free(scratch.pointer);
    const capacity = Math.max(needed, 64 * 1024);
    const pointer = m._malloc(capacity);
    scratch = { module: m, pointer, capacity: pointer ? capacity : 0 };
    if (pointer === 0) throw fail(where, `no memory for a text of ${text.length} code units`, RangeError);
  }
  const { written } = encoder.encodeInto(text, m.HEAPU8.subarray(scratch.pointer, scratch.pointer + needed));
  return [scratch.pointer, written];
}

// Gives a large input buffer back to the module after the call that needed it.
function releaseText(m) {
  if (scratch.module === m && scratch.capacity > KEEP_BYTES) {
    m._free(scratch.pointer);
    scratch = { module: null, pointer: 0, capacity: 0 };
  }
}

function describe(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? `an object (${value.constructor?.name ?? "Object"})` : `a ${typeof value}`;
}

function checkOptions(where, options, allowed) {
  if (options === undefined) return {};
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw fail(where, `the options must be an object, not ${describe(options)}`, TypeError);
  }
  for (const [key, value] of Object.entries(options)) {
    const rule = allowed[key];
    if (rule === undefined) {
      throw fail(where, `unknown option '${key}' (expected ${Object.keys(allowed).join(", ")})`, TypeError);
    }
    const ok = Array.isArray(rule) ? rule.includes(value)
      : rule === "a boolean" ? typeof value === "boolean"
      : rule.startsWith("an integer") ? Number.isInteger(value)
      : typeof value === "number" && Number.isFinite(value);
    if (!ok) {
      throw fail(where, `option ${key} must be ${Array.isArray(rule) ? "one of " + rule.join(", ") : rule}, ` +
                 `not ${JSON.stringify(value) ?? describe(value)}`, TypeError);
    }
  }
  return options;
}

// The settings line (the library's, as `neardup serve` and the stores print it) of SimHash options.
export function simhashSettings(options, where = "simhashSettings") {
  const o = checkOptions(where, options, SIMHASH_OPTIONS);
  const mode = o.mode ?? "shingles";
  let line = "method=simhash mode=" + mode;
  if (mode === "shingles") line += `:${o.shingleUnit ?? "word"}:${o.shingleSize ?? 3}`;
  if (mode === "keywords") line += ` keywords=${o.keywords ?? 0}`;
  line += ` weighting=${o.weighting ?? "occurrences"} lang=${o.lang ?? "auto"} fold=${o.fold ?? "none"}`;
  if (o.normalize === false) line += " normalize=off";
  return line + ` k=${o.k ?? 3}`;
}

// The settings line of the default (accurate) method with these options.
export function sketchSettings(options, where = "sketchSettings") {
  const o = checkOptions(where, options, SKETCH_OPTIONS);
  return `method=accurate threshold=${o.threshold ?? 0.8}`;
}

// Loads the module. `options.wasm`: the .wasm file's URL (default: beside this file) or its bytes.
// In Node, a file: URL is read from disk; elsewhere a URL is fetched. Calling it again after the
// module stopped loads a new one.
export async function load(options = {}) {
  if (wasm && !failure && options.wasm === undefined) return;
  let binary = options.wasm ?? new URL("./neardup_wasm.wasm", import.meta.url);
  if (typeof binary === "string") binary = new URL(binary, import.meta.url);
  if (binary instanceof URL) {
    if (binary.protocol === "file:") {
      const { readFile } = await import("node:fs/promises");
      binary = await readFile(binary);
    } else {
      const response = await fetch(binary);
      if (!response.ok) throw fail("load", `${binary} answered ${response.status} ${response.statusText}`);
      binary = await response.arrayBuffer();
    }
  }
  if (!(binary instanceof ArrayBuffer) && !ArrayBuffer.isView(binary)) {
    throw fail("load", `options.wasm must be a URL, a string or bytes, not ${describe(binary)}`, TypeError);
  }
  const bytes = binary instanceof ArrayBuffer ? new Uint8Array(binary)
    : new Uint8Array(binary.buffer, binary.byteOffset, binary.byteLength);
  wasm = await createNeardupModule({
    wasmBinary: bytes,
    print: () => {},
    printErr: () => {},
  });
  failure = null;
  signers.clear();
}

const HEX8 = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));
const HEX32 = (value) => value.toString(16).padStart(8, "0");

// A signature of the default method. The hex forms are made when first read.
class Signature {
  constructor(simhash, empty, sketch, bands) {
    this.simhash = simhash;
    this.empty = empty;
    this.sketch = sketch;
    this.bands = bands;
  }

  // The sketch in hex, as `neardup hash --sketch` prints it.
  get sketchHex() {
    let hex = "";
    for (const byte of this.sketch) hex += HEX8[byte];
    return hex;
  }

  // The band keys, 8 hex digits each, as `neardup hash --sketch` prints them.
  get bandsHex() {
    let hex = "";
    for (const key of this.bands) hex += HEX32(key);
    return hex;
  }

  toJSON() {
    return { simhash: this.simhash, empty: this.empty, sketch: this.sketchHex, bands: this.bandsHex };
  }
}

// Signs texts under one settings line (as `neardup serve` reports it), or options: { method:
// "accurate" (the default), threshold } or { method: "simhash", ...simhash options }.
export class Signer {
  #pointer;
  #sketchBytes;
  #bands;

  constructor(settings) {
    let line;
    if (typeof settings === "string") {
      line = settings;
    } else {
      const { method = "accurate", ...rest } = checkOptions("Signer", settings,
        { method: ["accurate", "simhash"], ...SIMHASH_OPTIONS, ...SKETCH_OPTIONS });
      line = method === "simhash" ? simhashSettings(rest, "Signer") : sketchSettings(rest, "Signer");
    }
    call("Signer", (m) => {
      const [text, bytes] = copyText(m, "Signer", line);
      this.#pointer = m._nd_signer_create(text, bytes);
      if (this.#pointer === 0) throw fail("Signer", lastError(m));
      this.#sketchBytes = m._nd_signer_sketch_bytes(this.#pointer);
      this.#bands = m._nd_signer_bands(this.#pointer);
      this.settings = utf8ToString(m, m._nd_signer_settings(this.#pointer));
      this.method = this.settings.startsWith("method=accurate") ? "accurate" : "simhash";
    });
  }

  // { simhash, empty } and, for the default method, { sketch, bands, sketchHex, bandsHex }.
  sign(text) {
    return call("sign", (m) => {
      if (this.#pointer === 0) throw fail("sign", "the signer was disposed");
      const [pointer, bytes] = copyText(m, "sign", text);
      let ok;
      try {
        ok = m._nd_sign(this.#pointer, pointer, bytes);
      } finally {
        releaseText(m);
      }
      if (!ok) throw fail("sign", lastError(m));
      const high = m._nd_signer_simhash_high(this.#pointer) >>> 0;
      const low = m._nd_signer_simhash_low(this.#pointer) >>> 0;
      const simhash = HEX32(high) + HEX32(low);
      const empty = m._nd_signer_empty(this.#pointer) !== 0;
      if (this.method !== "accurate") return { simhash, empty };
      const at = m._nd_signer_sketch(this.#pointer);
      const keys = m._nd_signer_band_keys(this.#pointer) >>> 2;
      return new Signature(simhash, empty, m.HEAPU8.slice(at, at + this.#sketchBytes),
                           m.HEAPU32.slice(keys, keys + this.#bands));
    });
  }

  // The estimated Jaccard similarity of two sketches of this signer (Uint8Array or hex).
  estimateJaccard(a, b) {
    if (this.method !== "accurate") throw fail("estimateJaccard", "a SimHash signer has no sketches");
    const left = sketchBytes("estimateJaccard", a, this.#sketchBytes, "a");
    const right = sketchBytes("estimateJaccard", b, this.#sketchBytes, "b");
    return call("estimateJaccard", (m) => {
      const pointer = m._malloc(2 * this.#sketchBytes);
      if (pointer === 0) throw fail("estimateJaccard", "no memory", RangeError);
      try {
        m.HEAPU8.set(left, pointer);
        m.HEAPU8.set(right, pointer + this.#sketchBytes);
        const estimate = m._nd_estimate_jaccard(this.#pointer, pointer, pointer + this.#sketchBytes,
                                                this.#sketchBytes);
        if (estimate < -1) throw fail("estimateJaccard", lastError(m));
        return estimate;
      } finally {
        m._free(pointer);
      }
    });
  }

  // Frees the signer's memory in the module (a disposed signer refuses to sign).
  dispose() {
    if (this.#pointer && wasm && !failure) wasm._nd_signer_free(this.#pointer);
    this.#pointer = 0;
  }
}

function cachedSigner(line) {
  let signer = signers.get(line);
  if (!signer) {
    signer = new Signer(line);
    signers.set(line, signer);
  }
  return signer;
}

// The 64-bit SimHash of `text` as 16 hex digits, as `neardup hash` prints it with the same options.
export function simhash(text, options) {
  return cachedSigner(simhashSettings(options, "simhash")).sign(text).simhash;
}

// The default method's signature of `text`, as `neardup hash --sketch` prints it:
// { sketch: Uint8Array, bands: Uint32Array, sketchHex, bandsHex, empty }.
export function sketch(text, options) {
  return cachedSigner(sketchSettings(options, "sketch")).sign(text);
}

// The estimated Jaccard similarity of two sketches of the default method (Uint8Array or hex).
export function estimateJaccard(a, b) {
  return cachedSigner(sketchSettings()).estimateJaccard(a, b);
}

// The number of differing bits of two SimHash fingerprints (16 hex digits, or BigInt).
export function hammingDistance(a, b) {
  const x = simhashValue("hammingDistance", a, "a"), y = simhashValue("hammingDistance", b, "b");
  return call("hammingDistance", (m) => m._nd_hamming_distance(
    Number(x & 0xffffffffn), Number(x >> 32n), Number(y & 0xffffffffn), Number(y >> 32n)));
}

function simhashValue(where, value, name) {
  if (typeof value === "bigint") {
    if (value < 0n || value >= 1n << 64n) throw fail(where, `${name} is not a 64-bit value`, RangeError);
    return value;
  }
  if (typeof value !== "string" || !/^[0-9a-fA-F]{16}$/.test(value)) {
    throw fail(where, `${name} must be 16 hex digits or a BigInt, not ${typeof value === "string"
      ? JSON.stringify(value) : describe(value)}`, TypeError);
  }
  return BigInt("0x" + value);
}

function sketchBytes(where, value, size, name) {
  let bytes = value;
  if (typeof value === "string") {
    if (value.length !== 2 * size || !/^[0-9a-fA-F]*$/.test(value)) {
      throw fail(where, `${name} must be ${2 * size} hex digits (a sketch of ${size} bytes)`, TypeError);
    }
    bytes = new Uint8Array(size);
    for (let i = 0; i < size; ++i) bytes[i] = parseInt(value.substr(2 * i, 2), 16);
  } else if (!(value instanceof Uint8Array)) {
    throw fail(where, `${name} must be a Uint8Array or hex, not ${describe(value)}`, TypeError);
  } else if (value.length !== size) {
    throw fail(where, `${name} has ${value.length} bytes; a sketch has ${size}`, RangeError);
  }
  return bytes;
}

// For the tests: the lines of wasm/unicode_dump.h for the code points [first, last].
export function unicodeDump(first, last) {
  return call("unicodeDump", (m) => utf8ToString(m, m._nd_unicode_dump(first, last)));
}
