/**
 * The Python phase's CUDA IPC exporter (CUDA only, no NVDEC): allocates device memory as sluice's batch slots do
 * (`CudaSlots`), writes a known pattern, prints `{ handle, size, device, pattern }` as one JSON line and keeps the
 * memory until stdin closes (an IPC mapping in another process needs its exporter alive).
 *
 *     deno run --allow-all scripts/gpu/ipc_export.ts BYTES
 * @module
 */
import { CudaSlots } from "../../src/memory/cuda_slots.ts";

const size = Number(Deno.args[0] ?? 1 << 20);
using slots = new CudaSlots(size, 0);
// byte i = (i * 31 + 7) mod 251: not periodic in any power of two, so a misplaced offset shows
slots.write(0, new Uint8Array(size).map((_, i) => (i * 31 + 7) % 251));
const d = slots.describe();
console.log(JSON.stringify({ ...d, pattern: "(i * 31 + 7) % 251" }));
for await (const _ of Deno.stdin.readable) { /* until the reader closes */ }
