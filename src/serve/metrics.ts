/**
 * Prometheus metrics of a batch server (node or not), served over HTTP when asked (`metrics: "HOST:PORT"`,
 * `sluice serve --metrics HOST:PORT`, `sluice.Loader(..., metrics=...)`): `GET /metrics` answers the text
 * exposition format (version 0.0.4), which `promtool check metrics` accepts. Every series carries the rank of the
 * session it is about (`rank`); a rank's series go when its client does.
 *
 * - per stage of each rank's loader: `sluice_stage_items_total` (tasks finished), `sluice_stage_busy_seconds_total`
 *   (compute time), `sluice_stage_queue_depth` (items in its input queue now);
 * - per rank: `sluice_clips_planned_total`, `sluice_clips_delivered_total`, `sluice_clips_failed_total`,
 *   `sluice_copied_bytes_total` (pixel bytes copied after decode), `sluice_batches_sent_total`, and the data
 *   waits its trainer reported as the histogram `sluice_data_wait_seconds` (`data_wait.ts`);
 * - the server: `sluice_clients` (connected now); a node server also `sluice_node_cpu_budget`,
 *   `sluice_node_workers`, `sluice_node_shared_clips_total` (clips demuxed for another rank) and
 *   `sluice_node_passes_total` (passes decoding clips of several ranks).
 * @module
 */

import { WAIT_BUCKETS_S } from "./data_wait.ts";
import type { NodeStats } from "./node_stats.ts";
import type { BatchServer } from "./server.ts";

/** One metric family: its help, its type and its samples. */
interface Family {
  name: string;
  help: string;
  type: "counter" | "gauge" | "histogram";
  samples: { suffix?: string; labels: Record<string, string>; value: number }[];
}

/** The exposition text of `server`'s metrics (and `node`'s, for a node server); see the module docs. */
export function metricsText(server: BatchServer, node?: NodeStats): string {
  const f = (name: string, type: Family["type"], help: string): Family => ({ name, help, type, samples: [] });
  const items = f(
    "sluice_stage_items_total",
    "counter",
    "Tasks a loader stage finished (done, dropped or failed).",
  );
  const busy = f("sluice_stage_busy_seconds_total", "counter", "Compute time of a loader stage's tasks.");
  const depth = f("sluice_stage_queue_depth", "gauge", "Items waiting in a loader stage's input queue now.");
  const planned = f("sluice_clips_planned_total", "counter", "Clips planned by a rank's loader.");
  const delivered = f("sluice_clips_delivered_total", "counter", "Clips delivered to a rank's trainer.");
  const failed = f("sluice_clips_failed_total", "counter", "Clips that failed to load (replaced or not).");
  const copied = f("sluice_copied_bytes_total", "counter", "Pixel bytes copied after decode for a rank.");
  const sent = f("sluice_batches_sent_total", "counter", "Batches sent to a rank's client.");
  const wait = f(
    "sluice_data_wait_seconds",
    "histogram",
    "How long a rank's training step waited for its batch.",
  );
  const families = [items, busy, depth, planned, delivered, failed, copied, sent, wait];
  const seen = new Set<string>();
  for (const { session: s, loader } of server.sessionReports()) {
    // Two clients of one rank (a server shared by jobs): the first keeps the series.
    const rank = String(s.rank);
    if (seen.has(rank)) continue;
    seen.add(rank);
    for (const st of loader?.pipeline.stages ?? []) {
      if (st.kind === "consumer") continue;
      const labels = { rank, stage: st.name };
      items.samples.push({ labels, value: st.totals.finished });
      busy.samples.push({ labels, value: st.totals.busyMs / 1000 });
      depth.samples.push({ labels, value: st.input?.length ?? 0 });
    }
    const clips = loader?.clips.total;
    planned.samples.push({ labels: { rank }, value: clips?.planned ?? 0 });
    delivered.samples.push({ labels: { rank }, value: clips?.delivered ?? 0 });
    failed.samples.push({ labels: { rank }, value: clips?.failed ?? 0 });
    copied.samples.push({ labels: { rank }, value: s.copiedBytes });
    sent.samples.push({ labels: { rank }, value: s.sent });
    const w = s.dataWait;
    WAIT_BUCKETS_S.forEach((le, i) =>
      wait.samples.push({ suffix: "_bucket", labels: { rank, le: String(le) }, value: w.buckets[i] })
    );
    wait.samples.push({ suffix: "_bucket", labels: { rank, le: "+Inf" }, value: w.count });
    wait.samples.push({ suffix: "_sum", labels: { rank }, value: w.sumMs / 1000 });
    wait.samples.push({ suffix: "_count", labels: { rank }, value: w.count });
  }
  const clients = f("sluice_clients", "gauge", "Clients (ranks) connected now.");
  clients.samples.push({ labels: {}, value: server.clients });
  families.push(clients);
  if (node !== undefined) {
    const one = (name: string, type: Family["type"], help: string, value: number) => {
      const x = f(name, type, help);
      x.samples.push({ labels: {}, value });
      families.push(x);
    };
    one(
      "sluice_node_cpu_budget",
      "gauge",
      "Decode Workers the node server's CPU budget allows.",
      node.cpuBudget,
    );
    one("sluice_node_workers", "gauge", "Decode Workers of the node server running now.", node.workers);
    one(
      "sluice_node_shared_clips_total",
      "counter",
      "Clips demuxed by one rank's task for another rank of the node.",
      node.shares.claimed,
    );
    one(
      "sluice_node_passes_total",
      "counter",
      "Decode passes run for clips of several ranks of the node.",
      node.shares.passes,
    );
  }
  return families.map(render).join("");
}

function render(f: Family): string {
  const lines = [`# HELP ${f.name} ${f.help}`, `# TYPE ${f.name} ${f.type}`];
  for (const s of f.samples) {
    const labels = Object.entries(s.labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(",");
    lines.push(`${f.name}${s.suffix ?? ""}${labels === "" ? "" : `{${labels}}`} ${number(s.value)}`);
  }
  return lines.join("\n") + "\n";
}

function escapeLabel(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

function number(v: number): string {
  return Number.isFinite(v) ? String(v) : v > 0 ? "+Inf" : v < 0 ? "-Inf" : "NaN";
}

/** A running metrics endpoint; `close()` stops it. */
export interface MetricsServer {
  /** Where it listens (the port the system picked for port 0). */
  readonly hostname: string;
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Serves {@link metricsText} at `GET /metrics` on `hostname:port` (404 elsewhere). Throws `Deno.errors.AddrInUse`
 * and the like when it cannot listen: the caller names the option.
 */
export function serveMetrics(
  at: { hostname: string; port: number },
  text: () => string,
): MetricsServer {
  const server = Deno.serve({ hostname: at.hostname, port: at.port, onListen: () => {} }, (req) => {
    if (new URL(req.url).pathname !== "/metrics" || req.method !== "GET") {
      return new Response("not found: GET /metrics\n", { status: 404 });
    }
    return new Response(text(), { headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" } });
  });
  const addr = server.addr as Deno.NetAddr;
  return { hostname: addr.hostname, port: addr.port, close: () => server.shutdown() };
}
