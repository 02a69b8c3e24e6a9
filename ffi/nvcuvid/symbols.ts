/**
 * Symbol table for NVIDIA's video decoder library (`libnvcuvid.so.1`, NVDECODE API). On LP64 the 64-bit map
 * functions (`cuvidMapVideoFrame64` / `cuvidUnmapVideoFrame64`) are the ones `nvcuvid.h` maps the plain names
 * to. Every argument is commented with its C type; results are `CUresult`.
 * @module
 */

/** libnvcuvid. `cuvidParseVideoData` must stay synchronous: the parser calls the callbacks inside it. */
export const NVCUVID_SYMBOLS = {
  cuvidGetDecoderCaps: { parameters: ["buffer"], result: "i32" }, // CUresult cuvidGetDecoderCaps(CUVIDDECODECAPS *pdc)
  cuvidCreateDecoder: {
    // CUresult cuvidCreateDecoder(CUvideodecoder *phDecoder, CUVIDDECODECREATEINFO *pdci)
    parameters: ["buffer", "buffer"],
    result: "i32",
  },
  cuvidDestroyDecoder: { parameters: ["pointer"], result: "i32" }, // CUresult cuvidDestroyDecoder(CUvideodecoder hDecoder)
  cuvidDecodePicture: {
    // CUresult cuvidDecodePicture(CUvideodecoder hDecoder, CUVIDPICPARAMS *pPicParams)
    parameters: ["pointer", "pointer"],
    result: "i32",
  },
  cuvidReconfigureDecoder: {
    // CUresult cuvidReconfigureDecoder(CUvideodecoder hDecoder, CUVIDRECONFIGUREDECODERINFO *pDecReconfigParams)
    parameters: ["pointer", "buffer"],
    result: "i32",
  },
  cuvidMapVideoFrame64: {
    // CUresult cuvidMapVideoFrame64(CUvideodecoder hDecoder, int nPicIdx, unsigned long long *pDevPtr,
    //   unsigned int *pPitch, CUVIDPROCPARAMS *pVPP)
    parameters: ["pointer", "i32", "buffer", "buffer", "buffer"],
    result: "i32",
  },
  cuvidUnmapVideoFrame64: {
    // CUresult cuvidUnmapVideoFrame64(CUvideodecoder hDecoder, unsigned long long DevPtr)
    parameters: ["pointer", "u64"],
    result: "i32",
  },
  cuvidCreateVideoParser: {
    // CUresult cuvidCreateVideoParser(CUvideoparser *pObj, CUVIDPARSERPARAMS *pParams)
    parameters: ["buffer", "buffer"],
    result: "i32",
  },
  cuvidParseVideoData: {
    // CUresult cuvidParseVideoData(CUvideoparser obj, CUVIDSOURCEDATAPACKET *pPacket)
    parameters: ["pointer", "buffer"],
    result: "i32",
  },
  cuvidDestroyVideoParser: { parameters: ["pointer"], result: "i32" }, // CUresult cuvidDestroyVideoParser(CUvideoparser obj)
} as const satisfies Deno.ForeignLibraryInterface;

/** `cudaVideoCodec` values (nvcuvid's enum; AV1 is 11 since Video Codec SDK 11). */
export const CUDA_VIDEO_CODEC = {
  MPEG1: 0,
  MPEG2: 1,
  MPEG4: 2,
  VC1: 3,
  H264: 4,
  JPEG: 5,
  HEVC: 8,
  VP8: 9,
  VP9: 10,
  AV1: 11,
} as const;

/** `cudaVideoChromaFormat` values. */
export const CUDA_VIDEO_CHROMA = { MONOCHROME: 0, YUV420: 1, YUV422: 2, YUV444: 3 } as const;

/** `cudaVideoSurfaceFormat` values. */
export const CUDA_VIDEO_SURFACE = { NV12: 0, P016: 1 } as const;

/** `CUvideopacketflags`. */
export const CUVID_PKT = {
  ENDOFSTREAM: 0x01,
  TIMESTAMP: 0x02,
  DISCONTINUITY: 0x04,
  ENDOFPICTURE: 0x08,
} as const;

/** The three parser callbacks: `int cb(void *pUserData, T *)`. */
export const PARSER_CALLBACK = {
  parameters: ["pointer", "pointer"],
  result: "i32",
} as const satisfies Deno.UnsafeCallbackDefinition;
