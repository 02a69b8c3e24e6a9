/**
 * What a backend child says, checked against what the parent asked for: the order of its frames (READY first,
 * no ITEM without a credit or outside an epoch, END counts that match the items sent) and their payloads by
 * schema, and counted (items, bytes, epochs, item failures by stage, the child's own stats). Items, epoch ends
 * and the child pipeline's fatal error go on to the consumer's side (`spawn.ts`); a frame out of order throws a
 * {@link ProtocolError} naming its stream offset.
 * @module
 */

import { ProtocolError, type StageError } from "../errors.ts";
import { deserializeError, type SerializedError } from "../error_wire.ts";
import { failureLine } from "../pipeline/stage.ts";
import type { BackendStats, ChildStats } from "./backend_stats.ts";
import type { Frame } from "./message_reader.ts";
import { decodeItem } from "./item_codec.ts";
import {
  controlPayload,
  type EndPayload,
  type FatalPayload,
  FrameType,
  HEADER_SIZE,
  type ItemErrorPayload,
} from "./protocol.ts";

/** Item failures kept with their errors (`BackendSource.errors`); later ones are only counted. */
export const KEPT_ERRORS = 100;

/** Where what the child sent goes. */
export interface ChildFrameSink {
  /** An item, `bytes` long on the wire. */
  item(value: unknown, bytes: number): void;
  /** The end of an epoch. */
  end(end: EndPayload): void;
  /** What the child's pipeline threw, with its class. */
  fatal(error: Error): void;
  /** A line for the log (the child's own, or an item failure). */
  log(line: string): void;
}

/** The child's frames of one backend; see the module docs. */
export class ChildFrames {
  /** Epochs ended (END frames). */
  epochs = 0;
  /** Items received. */
  items = 0;
  /** Encoded bytes of the items received. */
  bytes = 0;
  /** Item failures the child reported. */
  failures = 0;
  /** The same, per stage of the child's pipeline. */
  readonly failuresByStage: Record<string, number> = {};
  /** The child pipeline's stats, as last relayed. */
  child: ChildStats | null = null;
  /** The first {@link KEPT_ERRORS} item failures, each rebuilt with its class. */
  readonly errors: StageError[] = [];
  readonly #stream: string;
  readonly #name: string;
  readonly #pid: number;
  readonly #granted: () => number;
  readonly #sink: ChildFrameSink;
  #ready = false;
  #epochsSent = 0;
  #ends = 0;
  #epochItems = 0;

  /**
   * @param stream what the frames come from, for errors (`"backend stdout"`)
   * @param name the backend (`module#export`), for errors rebuilt from the child
   * @param pid the child's process id
   * @param granted the credits the parent has granted so far
   * @param sink where items, ends, the fatal error and log lines go
   */
  constructor(stream: string, name: string, pid: number, granted: () => number, sink: ChildFrameSink) {
    this.#stream = stream;
    this.#name = name;
    this.#pid = pid;
    this.#granted = granted;
    this.#sink = sink;
  }

  /** The counters, as `BackendStats` has them. */
  counts(): Pick<BackendStats, "epochs" | "items" | "bytes" | "failures" | "failuresByStage" | "child"> {
    const { epochs, items, bytes, failures, child } = this;
    return { epochs, items, bytes, failures, failuresByStage: { ...this.failuresByStage }, child };
  }

  /** The parent asked for another epoch (NEXT_EPOCH sent). */
  epochRequested(): void {
    this.#epochsSent++;
  }

  /**
   * Takes one frame from the child.
   * @throws {ProtocolError} when the frame breaks the conversation's order or its payload's schema
   */
  take(f: Frame): void {
    const at = f.offset + HEADER_SIZE;
    const broken = (what: string) => new ProtocolError(`${this.#stream}: ${what}`, f.offset);
    if (f.type === FrameType.ITEM) {
      if (!this.#ready) throw broken("ITEM frame before READY");
      const granted = this.#granted();
      if (this.items >= granted) {
        throw broken(`ITEM frame ${this.items + 1} without a credit (${granted} granted)`);
      }
      if (this.#ends >= this.#epochsSent) throw broken("ITEM frame outside an epoch");
      const value = decodeItem(f.payload, at);
      this.items++;
      this.#epochItems++;
      this.bytes += f.length;
      this.#sink.item(value, f.length);
      return;
    }
    const payload = controlPayload(f.type, f.payload, at, this.#stream);
    switch (f.type) {
      case FrameType.ITEM_ERROR:
        return this.#itemErrors(payload as ItemErrorPayload);
      case FrameType.STATS:
        this.child = payload as ChildStats;
        return;
      case FrameType.LOG:
        this.#sink.log(`[backend ${this.#pid}] ${(payload as { message: string }).message}`);
        return;
      case FrameType.END: {
        const end = payload as EndPayload;
        if (this.#ends >= this.#epochsSent) throw broken("END frame outside an epoch");
        if (end.epoch !== this.#ends + 1 || end.items !== this.#epochItems) {
          throw broken(
            `END of epoch ${end.epoch} with ${end.items} items, expected epoch ${this.#ends + 1} with ` +
              `${this.#epochItems}`,
          );
        }
        this.#ends++;
        this.#epochItems = 0;
        this.epochs++;
        this.#sink.end(end);
        return;
      }
      case FrameType.FATAL:
        // What the child's pipeline threw, with its class (a MediaError stays a MediaError).
        this.#sink.fatal(this.#fromChild((payload as FatalPayload).error));
        return;
      case FrameType.READY:
        if (this.#ready) throw broken("second READY frame");
        this.#ready = true;
        return;
      case FrameType.HEARTBEAT:
        return;
    }
  }

  #itemErrors(p: ItemErrorPayload): void {
    this.failures += p.count;
    this.failuresByStage[p.stage] = (this.failuresByStage[p.stage] ?? 0) + p.count;
    for (const { item, error } of p.errors) {
      const e = this.#fromChild(error);
      if (this.errors.length < KEPT_ERRORS) this.errors.push({ stage: p.stage, item, error: e });
      this.#sink.log(`[backend ${this.#pid}] ${failureLine(p.stage, item, e)}`);
    }
  }

  /** An error the child sent, rebuilt with its class; its stack says which child it came from. */
  #fromChild(s: SerializedError): Error {
    const e = deserializeError(s);
    Object.defineProperty(e, "stack", {
      value: `${e.stack}\n    at backend child ${this.#pid} (${this.#name})`,
      writable: true,
      configurable: true,
    });
    return e;
  }
}
