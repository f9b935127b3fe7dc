// Types of neardup's JavaScript layer (neardup.mjs).

/** Options of the classic SimHash, as the flags of `neardup hash`. */
export interface SimhashOptions {
  /** Features: "shingles" (default), "terms" or "keywords" (the last two segment Chinese with jieba's dictionary, which this build does not hold). */
  mode?: "shingles" | "terms" | "keywords";
  /** Chinese word segmentation: "auto" (default) or "zh" need jieba's dictionary; "en" makes every Han character a word. */
  lang?: "auto" | "zh" | "en";
  /** Keywords per document in keywords mode (0: automatic). */
  keywords?: number;
  shingleUnit?: "word" | "char";
  /** Units per shingle, 1..64 (default 3). */
  shingleSize?: number;
  weighting?: "occurrences" | "distinct";
  /** "t2s": Traditional Chinese folded to Simplified (OpenCC's table, built in). */
  fold?: "none" | "t2s";
  /** NFKC + case folding (default true). */
  normalize?: boolean;
  /** Hamming distance of near-duplicates, 0..7 (default 3): part of the settings line. */
  k?: number;
}

/** Options of the default (accurate) method. */
export interface SketchOptions {
  /** The Jaccard threshold the band keys are made for (default 0.8). */
  threshold?: number;
}

export interface SimhashSignature {
  /** 16 hex digits, as `neardup hash` prints. */
  simhash: string;
  /** No features (a blank text, symbols only): never a near-duplicate. */
  empty: boolean;
}

/** A signature of the default method; `sketchHex` and `bandsHex` are made when first read, and
 * `JSON.stringify` gives the server's form `{simhash, empty, sketch, bands}` (hex). */
export interface SketchSignature extends SimhashSignature {
  /** The stored sketch (132 bytes with the defaults). */
  sketch: Uint8Array;
  /** One 32-bit key per band. */
  bands: Uint32Array;
  /** The sketch in hex, as `neardup hash --sketch` prints it. */
  readonly sketchHex: string;
  /** The band keys, 8 hex digits each, as `neardup hash --sketch` prints them. */
  readonly bandsHex: string;
  toJSON(): { simhash: string; empty: boolean; sketch: string; bands: string };
}

/** Loads the module: the .wasm file beside neardup.mjs, or the URL or bytes given. */
export function load(options?: { wasm?: URL | string | ArrayBuffer | ArrayBufferView }): Promise<void>;

/** The 64-bit SimHash of `text` in 16 hex digits. Throws TypeError for a non-string or a lone surrogate. */
export function simhash(text: string, options?: SimhashOptions): string;

/** The default method's sketch and band keys of `text`. */
export function sketch(text: string, options?: SketchOptions): SketchSignature;

/** The estimated Jaccard similarity of two sketches of the default method (bytes or hex). */
export function estimateJaccard(a: Uint8Array | string, b: Uint8Array | string): number;

/** Differing bits of two SimHash fingerprints (16 hex digits or BigInt). */
export function hammingDistance(a: string | bigint, b: string | bigint): number;

/** The settings line of SimHash options, as the library writes it. */
export function simhashSettings(options?: SimhashOptions): string;
/** The settings line of the default method with these options. */
export function sketchSettings(options?: SketchOptions): string;

/** Signs texts under one settings line (as `neardup serve` reports it) or options. */
export class Signer {
  constructor(settings?: string | ({ method?: "accurate" } & SketchOptions) | ({ method: "simhash" } & SimhashOptions));
  /** The resolved settings line. */
  readonly settings: string;
  readonly method: "accurate" | "simhash";
  /** A SketchSignature for the default method, a SimhashSignature for SimHash. */
  sign(text: string): SimhashSignature | SketchSignature;
  estimateJaccard(a: Uint8Array | string, b: Uint8Array | string): number;
  /** Frees the signer's memory in the module. */
  dispose(): void;
}

/** For the tests: NFKC_Casefold and token kinds of each code point in [first, last]. */
export function unicodeDump(first: number, last: number): string;
