// NV12 -> planar RGB (or BGR), one thread per output pixel. Regenerate the embedded PTX with `deno task ptx`
// (src/nvdec/kernels/gen_ptx.ts). The C reference in tests/nvdec/double/cuda_double.c does the same arithmetic.
//   matrix: 0 = BT.601, 1 = BT.709.   flags: bit 0 = full range, bit 1 = BGR order.
//   dst: plane p of row y starts at dst + p * planeStride + y * dstPitch.
extern "C" __global__ void nv12_to_rgb_planar(const unsigned char *luma, const unsigned char *chroma,
                                              unsigned int srcPitch, unsigned char *dst, unsigned int dstPitch,
                                              unsigned long long planeStride, unsigned int width,
                                              unsigned int height, int matrix, int flags) {
  unsigned int x = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  float kr = matrix == 1 ? 0.2126f : 0.299f;
  float kb = matrix == 1 ? 0.0722f : 0.114f;
  float kg = 1.f - kr - kb;
  float Y = luma[(size_t)y * srcPitch + x];
  const unsigned char *c = chroma + (size_t)(y / 2) * srcPitch + (x & ~1u);
  float U = c[0] - 128.f;
  float V = c[1] - 128.f;
  if (!(flags & 1)) {
    Y = (Y - 16.f) * (255.f / 219.f);
    U = U * (255.f / 224.f);
    V = V * (255.f / 224.f);
  }
  float r = Y + 2.f * (1.f - kr) * V;
  float b = Y + 2.f * (1.f - kb) * U;
  float g = Y - (2.f * kb * (1.f - kb) / kg) * U - (2.f * kr * (1.f - kr) / kg) * V;
  int bgr = (flags >> 1) & 1;
  size_t o = (size_t)y * dstPitch + x;
  dst[o + (bgr ? 2 : 0) * planeStride] = (unsigned char)fminf(fmaxf(r + 0.5f, 0.f), 255.f);
  dst[o + planeStride] = (unsigned char)fminf(fmaxf(g + 0.5f, 0.f), 255.f);
  dst[o + (bgr ? 0 : 2) * planeStride] = (unsigned char)fminf(fmaxf(b + 0.5f, 0.f), 255.f);
}
