/**
 * FFmpeg error codes: the AVERROR constants sluice tests for, and `av_strerror` decoding.
 * @module
 */

function tag(a: string, b: string, c: string, d: string): number {
  return (a.charCodeAt(0) | (b.charCodeAt(0) << 8) | (c.charCodeAt(0) << 16) | (d.charCodeAt(0) << 24)) >>> 0;
}

/** `AVERROR_EOF`: end of file / decoder fully drained. */
export const AVERROR_EOF = -tag("E", "O", "F", " ") | 0;
/** `AVERROR(EAGAIN)` on Linux: send more input / read more output. */
export const AVERROR_EAGAIN = -11;
/** `AVERROR(ENOMEM)` on Linux. */
export const AVERROR_ENOMEM = -12;
/** `AVERROR(EINVAL)` on Linux. */
export const AVERROR_EINVAL = -22;
/** `AVERROR_INVALIDDATA`: invalid data found when processing input. */
export const AVERROR_INVALIDDATA = -tag("I", "N", "D", "A") | 0;
/** `AVERROR_DECODER_NOT_FOUND`. */
export const AVERROR_DECODER_NOT_FOUND = -tag("\xF8", "D", "E", "C") | 0;
/** `AVERROR_STREAM_NOT_FOUND`. */
export const AVERROR_STREAM_NOT_FOUND = -tag("\xF8", "S", "T", "R") | 0;

/** Anything with FFmpeg's `av_strerror`. */
export interface StrerrorSource {
  av_strerror(errnum: number, buf: Uint8Array<ArrayBuffer>, size: number | bigint): number;
}

/** FFmpeg's own message for an AVERROR code, e.g. "Invalid data found when processing input". */
export function avErrorString(avutil: StrerrorSource, code: number): string {
  const buf = new Uint8Array(256);
  if (avutil.av_strerror(code, buf, BigInt(buf.length)) < 0) return `unknown FFmpeg error ${code}`;
  const end = buf.indexOf(0);
  return new TextDecoder().decode(buf.subarray(0, end < 0 ? buf.length : end));
}
