/**
 * A process's (or a process tree's) memory and CPU time from Linux's `/proc`: the tuner's trials and the
 * children they start, such as the subprocess backend, and `sluice load`'s RSS figures. Memory is read in one
 * place, {@link procRss}. Elsewhere every reader returns null and the figure is reported as unknown.
 * @module
 */

const TICKS_PER_SEC = 100; // USER_HZ: 100 on every Linux ABI Deno runs on

function read(path: string): string | null {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return null;
  }
}

/**
 * A memory field of `/proc/<pid>/status` in bytes: `VmRSS` (resident now) or `VmHWM` (the peak resident);
 * null when it cannot be read (no such process, no `/proc`, `pid` undefined).
 */
export function procRss(pid: number | "self" | undefined, field: "VmRSS" | "VmHWM"): number | null {
  if (pid === undefined) return null;
  const m = read(`/proc/${pid}/status`)?.match(new RegExp(`^${field}:\\s+(\\d+) kB`, "m"));
  return m ? Number(m[1]) * 1024 : null;
}

/** `pid` and its descendants (children listed by each thread in `/proc/PID/task/TID/children`). */
export function processTree(pid: number): number[] {
  const out: number[] = [];
  const todo = [pid];
  while (todo.length > 0) {
    const p = todo.pop()!;
    out.push(p);
    let tasks: string[];
    try {
      tasks = [...Deno.readDirSync(`/proc/${p}/task`)].map((e) => e.name);
    } catch {
      continue;
    }
    for (const t of tasks) {
      const kids = read(`/proc/${p}/task/${t}/children`);
      if (kids) { for (const k of kids.trim().split(/\s+/)) if (k !== "") todo.push(Number(k)); }
    }
  }
  return out;
}

/** Resident set size of a process tree now, bytes (null when `/proc` is not there). */
export function treeRss(pid: number): number | null {
  return treeSum(pid, "VmRSS");
}

/** The sum of each process's peak RSS (`VmHWM`) over a tree, bytes: an upper bound of the tree's peak. */
export function treePeakRss(pid: number): number | null {
  return treeSum(pid, "VmHWM");
}

function treeSum(pid: number, field: "VmRSS" | "VmHWM"): number | null {
  let total = 0, any = false;
  for (const p of processTree(pid)) {
    const bytes = procRss(p, field);
    if (bytes === null) continue;
    total += bytes;
    any = true;
  }
  return any ? total : null;
}

/** CPU time (user + system, all threads) used so far by a process tree's live processes, seconds. */
export function treeCpuSeconds(pid: number): number | null {
  let ticks = 0, any = false;
  for (const p of processTree(pid)) {
    const stat = read(`/proc/${p}/stat`);
    if (stat === null) continue;
    // Fields after the command name (which may hold spaces), from field 3: utime is 14, stime 15.
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    ticks += Number(f[11]) + Number(f[12]);
    any = true;
  }
  return any ? ticks / TICKS_PER_SEC : null;
}

/** Sends SIGKILL to a process tree, children first (each id read before any is killed). */
export function killTree(pid: number): void {
  for (const p of processTree(pid).reverse()) {
    try {
      Deno.kill(p, "SIGKILL");
    } catch {
      // already gone
    }
  }
}
