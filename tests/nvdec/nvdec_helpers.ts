/** Shared set-up of the NVDEC tests: the double, loaded through SLUICE_LIBCUDA / SLUICE_LIBNVCUVID. @module */
import { buildDouble, NvDouble } from "./double/build.ts";

// The double is one library per process, and `deno test --parallel` runs test modules as threads of one process:
// its counters, injected failures and primary context would be shared by two modules running at once (a CI run
// counted another module's copies). So a module that uses it holds this lock from its import to its end (the
// lock goes with the module's file handle): such modules run one at a time, the others beside them.
const exclusive = await Deno.open(`${Deno.env.get("TMPDIR") ?? "/tmp"}/sluice-nvdouble.lock`, {
  create: true,
  write: true,
});
await exclusive.lock(true);

let double: NvDouble | undefined;

/** Builds (once) the double, points the bindings at it and returns its control handle. */
export async function useDouble(): Promise<NvDouble> {
  if (double) return double;
  const path = await buildDouble();
  Deno.env.set("SLUICE_LIBCUDA", path);
  Deno.env.set("SLUICE_LIBNVCUVID", path);
  double = new NvDouble(path);
  return double;
}

/** PSNR in dB of two equal-length byte arrays. */
export function psnr(a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} != ${b.length}`);
  let se = 0;
  for (let i = 0; i < a.length; i++) se += (a[i] - b[i]) ** 2;
  return se === 0 ? Infinity : 10 * Math.log10((255 * 255) / (se / a.length));
}

/** Packed RGB24 frames (`[T, H, W, 3]`) to planar (`[T, 3, H, W]`). */
export function packedToPlanar(rgb: Uint8Array, w: number, h: number): Uint8Array {
  const out = new Uint8Array(rgb.length);
  const px = w * h;
  for (let f = 0; f < rgb.length / (3 * px); f++) {
    for (let i = 0; i < px; i++) {
      for (let c = 0; c < 3; c++) out[f * 3 * px + c * px + i] = rgb[f * 3 * px + i * 3 + c];
    }
  }
  return out;
}
