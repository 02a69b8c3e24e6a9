/**
 * Seeded randomness shared by the sampler, the shuffle buffer, the shard reader and the clip transforms: one small
 * PRNG, one seed mixer and one shuffle, so the same (seed, epoch, position) gives the same draw everywhere, in
 * every process.
 * @module
 */

/** mulberry32: a small, fast 32-bit PRNG; returns floats in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Mixes integers into one 32-bit seed (splitmix-style finalizer per part). */
export function hashSeed(...parts: number[]): number {
  let h = 0x9e3779b9;
  for (const p of parts) {
    h = Math.imul(h ^ (p >>> 0), 0x85ebca6b) >>> 0;
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35) >>> 0;
    h ^= h >>> 16;
    // fold the high part of large seeds too
    h = (h + Math.floor(p / 4294967296)) >>> 0;
  }
  return h >>> 0;
}

/** Fisher–Yates shuffle with the given PRNG. */
export function shuffleInPlace<T>(a: T[], rand: () => number): T[] {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}
