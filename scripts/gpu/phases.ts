/**
 * The Deno phases of the GPU kit's run, one per process (`scripts/gpu/run.sh` gives each its own time limit):
 *
 *     deno run --allow-all scripts/gpu/phases.ts inventory|decode|kernels|loader|speed-decoders|speed-cache|speed-loader|speed-loader-profile
 *
 * `GPU_KIT` names the kit, `GPU_RESULT` the JSON-lines file the phase's checks go to (scripts/gpu/result.ts).
 * @module
 */
import { PhaseResult } from "./result.ts";
import { inventory } from "./inventory.ts";
import { decode } from "./correctness.ts";
import { kernels } from "./kernels.ts";
import { loader } from "./loader.ts";
import { speedCache, speedDecoders, speedLoader } from "./speed.ts";
import { speedLoaderProfile } from "./profile.ts";

const PHASES: Record<string, (r: PhaseResult) => Promise<void>> = {
  inventory,
  decode,
  kernels,
  loader,
  "speed-decoders": speedDecoders,
  "speed-cache": speedCache,
  "speed-loader": speedLoader,
  "speed-loader-profile": speedLoaderProfile,
};

if (import.meta.main) {
  const name = Deno.args[0];
  const phase = PHASES[name];
  if (!phase) {
    console.error(`usage: phases.ts ${Object.keys(PHASES).join("|")}`);
    Deno.exit(2);
  }
  const r = new PhaseResult();
  // The rehearsal's check of the time limits: this phase hangs in a check, as a stuck driver call would.
  if (Deno.env.get("GPU_HANG") === name) {
    await r.check("hang (GPU_HANG)", () => new Promise(() => setInterval(() => {}, 1000)));
  }
  await phase(r);
  // Workers and the driver's threads must not keep the process alive past its checks.
  Deno.exit(0);
}
