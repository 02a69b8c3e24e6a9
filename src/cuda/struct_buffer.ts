/**
 * A zeroed native struct built from a layout table (`ffi/cuda/layouts.ts`, `ffi/nvcuvid/layouts.ts`): fields
 * are set and read by name, never by raw offset, and the table's `size` is the buffer's size.
 * @module
 */
import type { StructLayout } from "../../ffi/nvcuvid/layouts.ts";

/** One struct in JS memory, to pass as a `buffer` argument. */
export class StructBuffer<L extends StructLayout> {
  readonly bytes: Uint8Array<ArrayBuffer>;
  readonly #dv: DataView;
  readonly layout: L;
  constructor(layout: L) {
    this.layout = layout;
    this.bytes = new Uint8Array(layout.size);
    this.#dv = new DataView(this.bytes.buffer);
  }
  u8(f: keyof L & string, v: number): this {
    this.#dv.setUint8(this.layout[f], v);
    return this;
  }
  i16(f: keyof L & string, v: number): this {
    this.#dv.setInt16(this.layout[f], v, true);
    return this;
  }
  u32(f: keyof L & string, v: number): this {
    this.#dv.setUint32(this.layout[f], v >>> 0, true);
    return this;
  }
  i32(f: keyof L & string, v: number): this {
    this.#dv.setInt32(this.layout[f], v, true);
    return this;
  }
  u64(f: keyof L & string, v: number | bigint): this {
    this.#dv.setBigUint64(this.layout[f], BigInt(v), true);
    return this;
  }
  ptr(f: keyof L & string, p: Deno.PointerValue): this {
    return this.u64(f, BigInt(Deno.UnsafePointer.value(p)));
  }
  getU8(f: keyof L & string): number {
    return this.#dv.getUint8(this.layout[f]);
  }
  getU16(f: keyof L & string): number {
    return this.#dv.getUint16(this.layout[f], true);
  }
  getU32(f: keyof L & string): number {
    return this.#dv.getUint32(this.layout[f], true);
  }
}

/** Read-only field access to a struct the library passed us by pointer (e.g. in a callback). */
export class StructView<L extends StructLayout> {
  readonly #v: Deno.UnsafePointerView;
  readonly layout: L;
  constructor(layout: L, p: Deno.PointerObject) {
    this.layout = layout;
    this.#v = new Deno.UnsafePointerView(p);
  }
  u8(f: keyof L & string): number {
    return this.#v.getUint8(this.layout[f]);
  }
  i32(f: keyof L & string): number {
    return this.#v.getInt32(this.layout[f]);
  }
  u32(f: keyof L & string): number {
    return this.#v.getUint32(this.layout[f]);
  }
  i64(f: keyof L & string): bigint {
    return this.#v.getBigInt64(this.layout[f]);
  }
}
