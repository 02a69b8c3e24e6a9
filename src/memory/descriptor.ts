/**
 * How another process maps a ring of batch slots: the memfd of this process (`shm.ts`), or one CUDA allocation
 * exported by IPC (`cuda_slots.ts`). The serve protocol's `memory` message carries it as it is.
 * @module
 */

/** How a client maps the slots: a memfd of the server, or one CUDA allocation exported by IPC. */
export type MemoryDescriptor =
  | { kind: "host"; fd: number; size: number }
  | { kind: "cuda"; device: number; handle: string; size: number };
