/*
 * ABI-level test double for libcuda / libnvcuvid. The structs below are declared by hand from NVIDIA's
 * Video Codec SDK documentation (nvcuvid.h / cuviddec.h) and the CUDA driver API reference, with natural C
 * types so that the C compiler (not sluice's TypeScript layout table) decides every offset. Never generate
 * this file from ffi/: the layout test compares the two.
 */
#ifndef NVDOUBLE_H
#define NVDOUBLE_H
#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext;
typedef void *CUstream;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUvideodecoder;
typedef void *CUvideoparser;
typedef void *CUvideoctxlock;
typedef long long CUvideotimestamp;

enum { DBL_SUCCESS = 0, DBL_INVALID_VALUE = 1, DBL_OUT_OF_MEMORY = 2, DBL_NOT_INITIALIZED = 3,
       DBL_NO_DEVICE = 100, DBL_INVALID_DEVICE = 101, DBL_INVALID_PTX = 218, DBL_INVALID_CONTEXT = 201,
       DBL_MAP_FAILED = 205, DBL_INVALID_HANDLE = 400, DBL_NOT_FOUND = 500, DBL_NOT_SUPPORTED = 801,
       DBL_UNKNOWN = 999 };

typedef struct {
  size_t srcXInBytes, srcY;
  int srcMemoryType;
  const void *srcHost;
  CUdeviceptr srcDevice;
  void *srcArray;
  size_t srcPitch;
  size_t dstXInBytes, dstY;
  int dstMemoryType;
  void *dstHost;
  CUdeviceptr dstDevice;
  void *dstArray;
  size_t dstPitch;
  size_t WidthInBytes, Height;
} DblMemcpy2D;

typedef struct {
  int codec;
  struct { unsigned int numerator, denominator; } frame_rate;
  unsigned char progressive_sequence, bit_depth_luma_minus8, bit_depth_chroma_minus8, min_num_decode_surfaces;
  unsigned int coded_width, coded_height;
  struct { int left, top, right, bottom; } display_area;
  int chroma_format;
  unsigned int bitrate;
  struct { int x, y; } display_aspect_ratio;
  struct {
    unsigned char video_format : 3;
    unsigned char video_full_range_flag : 1;
    unsigned char reserved_zero_bits : 4;
    unsigned char color_primaries, transfer_characteristics, matrix_coefficients;
  } video_signal_description;
  unsigned int seqhdr_data_length;
} DblVideoFormat;

typedef struct {
  int PicWidthInMbs, FrameHeightInMbs, CurrPicIdx, field_pic_flag, bottom_field_flag, second_field;
  unsigned int nBitstreamDataLen;
  const unsigned char *pBitstreamData;
  unsigned int nNumSlices;
  const unsigned int *pSliceDataOffsets;
  int ref_pic_flag, intra_pic_flag;
  unsigned int Reserved[30];
  union { unsigned int CodecReserved[1024]; void *align; } CodecSpecific;
} DblPicParams;

typedef struct {
  DblVideoFormat format;
  union { unsigned int av1_seqhdr_words[256]; unsigned char raw_seqhdr_data[1024]; } seqhdr;
} DblVideoFormatEx;

typedef struct {
  int picture_index, progressive_frame, top_field_first, repeat_first_field;
  CUvideotimestamp timestamp;
} DblDispInfo;

typedef int (*DblSeqCb)(void *, DblVideoFormat *);
typedef int (*DblDecCb)(void *, DblPicParams *);
typedef int (*DblDispCb)(void *, DblDispInfo *);

typedef struct {
  int CodecType;
  unsigned int ulMaxNumDecodeSurfaces, ulClockRate, ulErrorThreshold, ulMaxDisplayDelay;
  unsigned int uReserved1[5];
  void *pUserData;
  DblSeqCb pfnSequenceCallback;
  DblDecCb pfnDecodePicture;
  DblDispCb pfnDisplayPicture;
  void *pvReserved2[7];
  void *pExtVideoInfo;
} DblParserParams;

typedef struct {
  unsigned long flags, payload_size;
  const unsigned char *payload;
  CUvideotimestamp timestamp;
} DblSourcePacket;

typedef struct {
  int eCodecType, eChromaFormat;
  unsigned int nBitDepthMinus8;
  unsigned int reserved1[3];
  unsigned char bIsSupported, nNumNVDECs;
  unsigned short nOutputFormatMask;
  unsigned int nMaxWidth, nMaxHeight, nMaxMBCount;
  unsigned short nMinWidth, nMinHeight;
  unsigned char bIsHistogramSupported, nCounterBitDepth;
  unsigned short nMaxHistogramBins;
  unsigned int reserved3[10];
} DblDecodeCaps;

typedef struct { short left, top, right, bottom; } DblShortRect;

typedef struct { char reserved[64]; } DblIpcHandle; /* CUipcMemHandle (CU_IPC_HANDLE_SIZE bytes) */

typedef struct {
  unsigned long ulWidth, ulHeight, ulNumDecodeSurfaces;
  int CodecType, ChromaFormat;
  unsigned long ulCreationFlags, bitDepthMinus8, ulIntraDecodeOnly, ulMaxWidth, ulMaxHeight, Reserved1;
  DblShortRect display_area;
  int OutputFormat, DeinterlaceMode;
  unsigned long ulTargetWidth, ulTargetHeight, ulNumOutputSurfaces;
  CUvideoctxlock vidLock;
  DblShortRect target_rect;
  unsigned long Reserved2[5];
} DblDecodeCreateInfo;

typedef struct {
  unsigned int ulWidth, ulHeight, ulTargetWidth, ulTargetHeight, ulNumDecodeSurfaces;
  unsigned int reserved1[12];
  DblShortRect display_area, target_rect;
  unsigned int reserved2[11];
} DblReconfigureInfo;

typedef struct {
  int progressive_frame, second_field, top_field_first, unpaired_field;
  unsigned int reserved_flags, reserved_zero;
  unsigned long long raw_input_dptr;
  unsigned int raw_input_pitch, raw_input_format;
  unsigned long long raw_output_dptr;
  unsigned int raw_output_pitch, Reserved1;
  CUstream output_stream;
  unsigned int Reserved[46];
  void *Reserved2[2];
} DblProcParams;

/* Shared between cuda_double.c and nvcuvid_double.c (one shared object). */
void dbl_log(const char *fmt, ...);
int dbl_fault(const char *name); /* 0, or the CUresult to fail this call with */
int dbl_has_context(void);
CUresult dbl_dev_alloc(size_t size, CUdeviceptr *out);
CUresult dbl_dev_free(CUdeviceptr p);
unsigned char *dbl_dev_resolve(CUdeviceptr p, size_t len); /* NULL when [p, p+len) is not inside one allocation */
int dbl_stream_valid(CUstream s);
extern __thread unsigned dbl_max_width, dbl_max_height, dbl_num_nvdecs;
int dbl_device_count(void); /* this thread's configured device count */
void dbl_decoder_busy(long long ns); /* NVML's decoder utilisation: decode time spent, any thread */
void dbl_nvcuvid_reset(void);

#endif
