/**
 * Struct layouts of the NVDECODE API (`nvcuvid.h`, `cuviddec.h` of NVIDIA's Video Codec SDK) for Linux x86-64.
 * LP64: `unsigned long` (`tcu_ulong`) fields are 8 bytes; enums and `unsigned int` are 4; pointers 8.
 * Written from the SDK headers' declarations, field by field; every table carries its `size`, which
 * `tests/nvdec/layouts_test.ts` compares with an independently declared C struct.
 * @module
 */

/** `CUVIDPARSERPARAMS`, 136 bytes: `cuvidCreateVideoParser`. */
export const CUVIDPARSERPARAMS = {
  size: 136,
  CodecType: 0, // cudaVideoCodec
  ulMaxNumDecodeSurfaces: 4, // unsigned int
  ulClockRate: 8, // unsigned int
  ulErrorThreshold: 12, // unsigned int
  ulMaxDisplayDelay: 16, // unsigned int
  uReserved1: 20, // unsigned int[5] (bit fields in newer SDKs; zero)
  pUserData: 40, // void *
  pfnSequenceCallback: 48, // PFNVIDSEQUENCECALLBACK
  pfnDecodePicture: 56, // PFNVIDDECODECALLBACK
  pfnDisplayPicture: 64, // PFNVIDDISPLAYCALLBACK
  pvReserved2: 72, // void *[7] (SEI / operating point callbacks in newer SDKs; NULL)
  pExtVideoInfo: 128, // CUVIDEOFORMATEX *
} as const;

/** `CUVIDEOFORMAT`, 64 bytes: what the sequence callback receives. */
export const CUVIDEOFORMAT = {
  size: 64,
  codec: 0, // cudaVideoCodec
  frameRateNumerator: 4, // unsigned int
  frameRateDenominator: 8, // unsigned int
  progressive_sequence: 12, // unsigned char
  bit_depth_luma_minus8: 13, // unsigned char
  bit_depth_chroma_minus8: 14, // unsigned char
  min_num_decode_surfaces: 15, // unsigned char
  coded_width: 16, // unsigned int
  coded_height: 20, // unsigned int
  displayLeft: 24, // int
  displayTop: 28, // int
  displayRight: 32, // int
  displayBottom: 36, // int
  chroma_format: 40, // cudaVideoChromaFormat
  bitrate: 44, // unsigned int
  darX: 48, // int
  darY: 52, // int
  videoSignalFlags: 56, // unsigned char: video_format:3, video_full_range_flag:1, reserved:4
  color_primaries: 57, // unsigned char
  transfer_characteristics: 58, // unsigned char
  matrix_coefficients: 59, // unsigned char
  seqhdr_data_length: 60, // unsigned int
} as const;

/**
 * `CUVIDEOFORMATEX`, 1088 bytes: `CUVIDPARSERPARAMS.pExtVideoInfo`. A `CUVIDEOFORMAT` followed by a union of
 * `CUVIDAV1SEQHDR` and `unsigned char raw_seqhdr_data[1024]` (the codec's sequence header, e.g. AV1's
 * sequence header OBU from av1C; its length goes in `format.seqhdr_data_length`).
 */
export const CUVIDEOFORMATEX = {
  size: 1088,
  format: 0, // CUVIDEOFORMAT
  seqhdr_data_length: 60, // format.seqhdr_data_length, unsigned int
  raw_seqhdr_data: 64, // unsigned char[1024] (union with CUVIDAV1SEQHDR, 4-byte aligned)
} as const;

/** Bytes of `CUVIDEOFORMATEX.raw_seqhdr_data`. */
export const RAW_SEQHDR_CAPACITY = 1024;

/** `CUVIDDECODECAPS`, 88 bytes: `cuvidGetDecoderCaps`. */
export const CUVIDDECODECAPS = {
  size: 88,
  eCodecType: 0, // cudaVideoCodec (IN)
  eChromaFormat: 4, // cudaVideoChromaFormat (IN)
  nBitDepthMinus8: 8, // unsigned int (IN)
  bIsSupported: 24, // unsigned char (OUT)
  nNumNVDECs: 25, // unsigned char (OUT; reserved, zero, in SDKs before 11)
  nOutputFormatMask: 26, // unsigned short (OUT)
  nMaxWidth: 28, // unsigned int
  nMaxHeight: 32, // unsigned int
  nMaxMBCount: 36, // unsigned int
  nMinWidth: 40, // unsigned short
  nMinHeight: 42, // unsigned short
} as const;

/** `CUVIDDECODECREATEINFO`, 176 bytes: `cuvidCreateDecoder`. */
export const CUVIDDECODECREATEINFO = {
  size: 176,
  ulWidth: 0, // unsigned long
  ulHeight: 8, // unsigned long
  ulNumDecodeSurfaces: 16, // unsigned long
  CodecType: 24, // cudaVideoCodec
  ChromaFormat: 28, // cudaVideoChromaFormat
  ulCreationFlags: 32, // unsigned long
  bitDepthMinus8: 40, // unsigned long
  ulIntraDecodeOnly: 48, // unsigned long
  ulMaxWidth: 56, // unsigned long
  ulMaxHeight: 64, // unsigned long
  Reserved1: 72, // unsigned long
  displayLeft: 80, // short
  displayTop: 82, // short
  displayRight: 84, // short
  displayBottom: 86, // short
  OutputFormat: 88, // cudaVideoSurfaceFormat
  DeinterlaceMode: 92, // cudaVideoDeinterlaceMode
  ulTargetWidth: 96, // unsigned long
  ulTargetHeight: 104, // unsigned long
  ulNumOutputSurfaces: 112, // unsigned long
  vidLock: 120, // CUvideoctxlock
  targetLeft: 128, // short
  targetTop: 130, // short
  targetRight: 132, // short
  targetBottom: 134, // short
  Reserved2: 136, // unsigned long[5] (enableHistogram + [4] in newer SDKs)
} as const;

/** `CUVIDRECONFIGUREDECODERINFO`, 128 bytes: `cuvidReconfigureDecoder`. */
export const CUVIDRECONFIGUREDECODERINFO = {
  size: 128,
  ulWidth: 0, // unsigned int
  ulHeight: 4, // unsigned int
  ulTargetWidth: 8, // unsigned int
  ulTargetHeight: 12, // unsigned int
  ulNumDecodeSurfaces: 16, // unsigned int
  reserved1: 20, // unsigned int[12]
  displayLeft: 68, // short
  displayTop: 70, // short
  displayRight: 72, // short
  displayBottom: 74, // short
  targetLeft: 76, // short
  targetTop: 78, // short
  targetRight: 80, // short
  targetBottom: 82, // short
  reserved2: 84, // unsigned int[11]
} as const;

/** `CUVIDPICPARAMS`, 4280 bytes: what the decode callback receives; sluice only passes it on. */
export const CUVIDPICPARAMS = {
  size: 4280,
  PicWidthInMbs: 0, // int
  FrameHeightInMbs: 4, // int
  CurrPicIdx: 8, // int
  field_pic_flag: 12, // int
  bottom_field_flag: 16, // int
  second_field: 20, // int
  nBitstreamDataLen: 24, // unsigned int
  pBitstreamData: 32, // const unsigned char *
  nNumSlices: 40, // unsigned int
  pSliceDataOffsets: 48, // const unsigned int *
  ref_pic_flag: 56, // int
  intra_pic_flag: 60, // int
  Reserved: 64, // unsigned int[30]
  CodecSpecific: 184, // union, 4096 bytes
} as const;

/** `CUVIDPARSERDISPINFO`, 24 bytes: what the display callback receives. */
export const CUVIDPARSERDISPINFO = {
  size: 24,
  picture_index: 0, // int
  progressive_frame: 4, // int
  top_field_first: 8, // int
  repeat_first_field: 12, // int
  timestamp: 16, // CUvideotimestamp (long long)
} as const;

/** `CUVIDPROCPARAMS`, 264 bytes: `cuvidMapVideoFrame64`. */
export const CUVIDPROCPARAMS = {
  size: 264,
  progressive_frame: 0, // int
  second_field: 4, // int
  top_field_first: 8, // int
  unpaired_field: 12, // int
  reserved_flags: 16, // unsigned int
  reserved_zero: 20, // unsigned int
  raw_input_dptr: 24, // unsigned long long
  raw_input_pitch: 32, // unsigned int
  raw_input_format: 36, // unsigned int
  raw_output_dptr: 40, // unsigned long long
  raw_output_pitch: 48, // unsigned int
  Reserved1: 52, // unsigned int
  output_stream: 56, // CUstream
  Reserved: 64, // unsigned int[46]
  Reserved2: 248, // void *[2]
} as const;

/** `CUVIDSOURCEDATAPACKET`, 32 bytes: `cuvidParseVideoData`. */
export const CUVIDSOURCEDATAPACKET = {
  size: 32,
  flags: 0, // unsigned long
  payload_size: 8, // unsigned long
  payload: 16, // const unsigned char *
  timestamp: 24, // CUvideotimestamp (long long)
} as const;

/** Every NVDEC layout, by struct name. */
export const NVCUVID_LAYOUTS = {
  CUVIDPARSERPARAMS,
  CUVIDEOFORMAT,
  CUVIDEOFORMATEX,
  CUVIDDECODECAPS,
  CUVIDDECODECREATEINFO,
  CUVIDRECONFIGUREDECODERINFO,
  CUVIDPICPARAMS,
  CUVIDPARSERDISPINFO,
  CUVIDPROCPARAMS,
  CUVIDSOURCEDATAPACKET,
} as const;

/** The type of a layout table: field name → byte offset, plus `size`. */
export type StructLayout = { readonly size: number } & { readonly [field: string]: number };
