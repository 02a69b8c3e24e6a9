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

// Planar RGB frames (as nv12_to_rgb_planar wrote them, coded orientation) -> a clip's frames in their final place:
// turned and mirrored, in the batch's layout, as bytes or normalised float32, one thread per output pixel of one
// frame (blockIdx.z = frame). Output pixel (x, y) of frame t reads source pixel (sx0 + x*dxX + y*dxY,
// sy0 + x*dyX + y*dyY) of source frame t (src + t*srcFrame, plane c at c*srcPlane, rows of srcPitch bytes), and
// writes channel c at element t*tStride + c*cStride + y*yStride + x*xStride of dst (bytes, or floats when
// flags bit 0: v*scale[c] + offset[c]). The C reference in tests/nvdec/double/cuda_double.c does the same.
extern "C" __global__ void rgb_planar_to_clip(const unsigned char *src, unsigned int srcPitch,
                                              unsigned long long srcPlane, unsigned long long srcFrame,
                                              unsigned char *dst, unsigned int width, unsigned int height,
                                              unsigned long long xStride, unsigned long long yStride,
                                              unsigned long long cStride, unsigned long long tStride, int sx0,
                                              int sy0, int dxX, int dxY, int dyX, int dyY, int flags,
                                              float scale0, float scale1, float scale2, float offset0,
                                              float offset1, float offset2) {
  unsigned int x = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  unsigned int t = blockIdx.z;
  int sx = sx0 + (int)x * dxX + (int)y * dxY;
  int sy = sy0 + (int)x * dyX + (int)y * dyY;
  const unsigned char *s = src + t * srcFrame + (size_t)sy * srcPitch + sx;
  unsigned long long o = t * tStride + y * yStride + x * xStride;
  float scale[3] = {scale0, scale1, scale2};
  float offset[3] = {offset0, offset1, offset2};
  for (int c = 0; c < 3; c++) {
    unsigned char v = s[c * srcPlane];
    if (flags & 1) ((float *)dst)[o + c * cStride] = v * scale[c] + offset[c];
    else dst[o + c * cStride] = v;
  }
}
