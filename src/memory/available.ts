/**
 * Memory that exists for this process to commit: the kernel's estimate of what can be used without swapping
 * (`MemAvailable` in `/proc/meminfo`), or less when the process's cgroup has a memory limit (a container's:
 * cgroup v2 `memory.max` less `memory.current`, v1 `memory.limit_in_bytes` less `memory.usage_in_bytes`), as
 * its pages count against it. Batch slots are memfd pages (`shm.ts`): shared memory that no file system holds,
 * so `/dev/shm`'s size does not bound them (a container's small `/dev/shm` included); this does.
 * @module
 */

/** Memory left to commit, and where the figure comes from (for messages). */
export interface AvailableMemory {
  bytes: number;
  /** E.g. "MemAvailable in /proc/meminfo", "under the cgroup's memory.max". */
  source: string;
}

/** A cgroup limit at or above this is no limit (the kernel writes 2^63 rounded down to pages). */
const NO_LIMIT = 2 ** 60;

function read(path: string): string | null {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return null;
  }
}

function bytesOf(text: string | null): number | null {
  const n = text === null ? NaN : Number(text.trim());
  return Number.isFinite(n) && n >= 0 && n < NO_LIMIT ? n : null;
}

/** What the cgroup's memory limit leaves, or null when there is none (or it cannot be read). */
function cgroupLeft(cgroupFile: string | null): AvailableMemory | null {
  for (const line of (cgroupFile ?? "").split("\n")) {
    const [id, controllers, path] = line.split(":");
    if (path === undefined) continue;
    const v2 = id === "0" && controllers === "";
    if (!v2 && !controllers.split(",").includes("memory")) continue;
    const dir = v2 ? `/sys/fs/cgroup${path}` : `/sys/fs/cgroup/memory${path}`;
    const [limitFile, usageFile] = v2
      ? ["memory.max", "memory.current"]
      : ["memory.limit_in_bytes", "memory.usage_in_bytes"];
    const limit = bytesOf(read(`${dir}/${limitFile}`));
    const usage = bytesOf(read(`${dir}/${usageFile}`));
    if (limit !== null && usage !== null) {
      return { bytes: Math.max(0, limit - usage), source: `left under the cgroup's ${limitFile}` };
    }
  }
  return null;
}

/**
 * The memory this process can still commit (see the module docs), or null where it cannot be told (not
 * Linux, or `/proc` unreadable): the smaller of `MemAvailable` and what a cgroup limit leaves.
 */
export function availableMemory(): AvailableMemory | null {
  const meminfo = read("/proc/meminfo");
  const kb = meminfo === null ? null : /^MemAvailable:\s+(\d+) kB$/m.exec(meminfo)?.[1];
  const system: AvailableMemory | null = kb == null
    ? null
    : { bytes: Number(kb) * 1024, source: "MemAvailable in /proc/meminfo" };
  const cgroup = cgroupLeft(read("/proc/self/cgroup"));
  if (system === null || (cgroup !== null && cgroup.bytes < system.bytes)) return cgroup;
  return system;
}

/** Bytes in binary units: `512 B`, `1.5 KiB`, `3.2 MiB`, `1.1 GiB`, up to EiB (an impossible size too). */
export function bytesText(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
  let u = 0, x = n;
  while (x >= 1024 && u < units.length - 1) {
    x /= 1024;
    u++;
  }
  return u === 0 ? `${n} B` : `${x.toFixed(1)} ${units[u]}`;
}
