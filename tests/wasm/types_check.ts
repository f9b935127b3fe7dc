// Uses every declaration of js/neardup.d.ts as a TypeScript user would (checked with tsc --strict by
// types_test.mjs; never run). A wrong use below must stay wrong: the @ts-expect-error lines fail the
// check when the types stop rejecting them.
import * as neardup from "neardup";

export async function use(settings: string): Promise<number> {
  await neardup.load();
  await neardup.load({ wasm: new URL("file:///x.wasm") });
  const hex: string = neardup.simhash("text", { mode: "shingles", shingleUnit: "char", shingleSize: 5, lang: "en" });
  const s: neardup.SketchSignature = neardup.sketch("text", { threshold: 0.7 });
  const bytes: Uint8Array = s.sketch;
  const keys: Uint32Array = s.bands;
  const json: { sketch: string; bands: string } = s.toJSON();
  const j: number = neardup.estimateJaccard(bytes, s.sketchHex);
  const d: number = neardup.hammingDistance(hex, 0n);
  const signer = new neardup.Signer(settings);
  const other = new neardup.Signer({ method: "simhash", shingleSize: 2, k: 4 });
  const signature = signer.sign("text");
  const line: string = other.settings + neardup.simhashSettings({ fold: "t2s" }) + neardup.sketchSettings();
  signer.dispose();
  // @ts-expect-error: texts are strings
  neardup.simhash(42);
  // @ts-expect-error: an unknown mode
  neardup.simhash("text", { mode: "words" });
  // @ts-expect-error: SimHash options are not the sketch's
  neardup.sketch("text", { shingleSize: 3 });
  return j + d + keys.length + json.sketch.length + signature.simhash.length + line.length + neardup.unicodeDump(0, 1).length;
}
