/** Decoding `CUresult` codes through the driver's own `cuGetErrorName` / `cuGetErrorString`. @module */
import { readCString } from "../cstring.ts";
import type { CUDA_SYMBOLS } from "./symbols.ts";

type CudaSymbols = Deno.DynamicLibrary<typeof CUDA_SYMBOLS>["symbols"];

/** The driver's name and description of `code`; a generic text when the driver does not know the code. */
export function cudaErrorText(cuda: CudaSymbols, code: number): { name: string; description: string } {
  const slot = new BigUint64Array(1);
  const bytes = new Uint8Array(slot.buffer);
  const name = cuda.cuGetErrorName(code, bytes) === 0
    ? readCString(Deno.UnsafePointer.create(slot[0])) ?? `CUresult ${code}`
    : `CUresult ${code}`;
  slot[0] = 0n;
  const description = cuda.cuGetErrorString(code, bytes) === 0
    ? readCString(Deno.UnsafePointer.create(slot[0])) ?? "unknown error"
    : "unknown error";
  return { name, description };
}
