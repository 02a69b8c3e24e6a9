/** Out-parameters shared by every binding. @module */

/**
 * An 8-byte out-parameter (`T **`, `CUdeviceptr *`, `int *`): pass `bytes` as the argument, then read what the
 * callee wrote. It may hold a pointer to begin with (for `T **` arguments that are read and written, e.g.
 * `avformat_open_input` with a pre-allocated context, or the `**` of a free function).
 */
export class OutParam {
  readonly bytes: Uint8Array<ArrayBuffer>;
  readonly u64: BigUint64Array;
  readonly i32: Int32Array;

  constructor(initial: Deno.PointerValue = null) {
    const buf = new ArrayBuffer(8);
    this.bytes = new Uint8Array(buf);
    this.u64 = new BigUint64Array(buf);
    this.i32 = new Int32Array(buf);
    this.u64[0] = BigInt(Deno.UnsafePointer.value(initial));
  }

  /** The pointer the out-parameter holds (null for NULL). */
  get pointer(): Deno.PointerValue {
    return Deno.UnsafePointer.create(this.u64[0]);
  }
}
