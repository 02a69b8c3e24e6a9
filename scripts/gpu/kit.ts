/**
 * What the phases share: the kit (`$GPU_KIT`: its media manifest, its dataset, whether it is the small rehearsal
 * kit), what this machine offers (the CUDA driver, NVDEC), and the run's time settings.
 * @module
 */
import { nvdecAvailable } from "../../src/nvdec/available.ts";
import { checkCu, cuda } from "../../src/nvdec/driver.ts";
import { OutParam } from "../../ffi/out_param.ts";

/** One clip of the kit (media/manifest.json). */
export interface Clip {
  file: string;
  codec: "h264" | "hevc";
  /** "WxH". */
  size: string;
  seconds: number;
  gop: number;
  bframes: number;
  /** What the phases use it for: decode, speed-large, speed-small, bframes, seek, cache-*. */
  roles: string[];
  /** Absolute path. */
  path: string;
  width: number;
  height: number;
}

/** The kit folder. */
export const KIT = Deno.env.get("GPU_KIT") ?? ".gpu-kit";

/** kit.json. */
export const kitInfo: { small?: boolean } & Record<string, unknown> = (() => {
  try {
    return JSON.parse(Deno.readTextFileSync(`${KIT}/kit.json`));
  } catch {
    return {};
  }
})();

/** Every clip of the kit. */
export function clips(): Clip[] {
  const list = JSON.parse(Deno.readTextFileSync(`${KIT}/media/manifest.json`)) as Clip[];
  return list.map((c) => {
    const [width, height] = c.size.split("x").map(Number);
    return { ...c, path: `${KIT}/media/${c.file}`, width, height };
  });
}

/** The clips with `role`. */
export function withRole(role: string): Clip[] {
  return clips().filter((c) => c.roles.includes(role));
}

/** The one clip with `role` (and `codec`, when given). */
export function clipFor(role: string, codec = "h264"): Clip {
  const c = withRole(role).find((c) => c.codec === codec);
  if (!c) throw new Error(`the kit has no ${codec} clip for ${role} (media/manifest.json)`);
  return c;
}

/** The kit's labelled dataset. */
export const DATASET = `${KIT}/dataset`;

/** A number from the environment, else `fallback` (the rehearsal sets small ones). */
export function setting(name: string, fallback: number): number {
  const v = Number(Deno.env.get(name));
  return Number.isFinite(v) && v > 0 ? v : fallback;
}

/** Whether the CUDA driver answers (the CUDA-only checks need it), else why not. */
export function cudaState(): { ok: true; devices: number } | { ok: false; reason: string } {
  try {
    const n = new OutParam();
    checkCu(cuda().cuDeviceGetCount(n.bytes), "", "cuDeviceGetCount");
    if (n.i32[0] < 1) return { ok: false, reason: "the CUDA driver reports no device" };
    return { ok: true, devices: n.i32[0] };
  } catch (e) {
    return { ok: false, reason: e instanceof Error ? e.message.split("\n")[0] : String(e) };
  }
}

/** Why NVDEC checks cannot run here, or null when they can. */
export function nvdecMissing(): string | null {
  const a = nvdecAvailable();
  return a.ok ? null : `no NVDEC: ${a.reason}`;
}
