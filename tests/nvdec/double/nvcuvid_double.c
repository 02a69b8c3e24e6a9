/*
 * Test double of libnvcuvid: a parser that splits the Annex-B (or VP9/AV1) stream with libavcodec's parser and
 * fires the sequence / decode / display callbacks synchronously inside cuvidParseVideoData, as the real one
 * does; a decoder that decodes with libavcodec into "decode surfaces" and serves NV12 frames through
 * cuvidMapVideoFrame64 in device memory at a pitch wider than the width (crop = display area, resize =
 * target size via libswscale with SWS_BICUBIC: deliberately not the CPU path's default bilinear, so tests
 * comparing the two bound a real scaler difference; NVIDIA does not document the hardware scaler's filter).
 *
 * Like the real parser, it tells reference pictures (`ref_pic_flag`: H.264 nal_ref_idc != 0; HEVC: not a
 * sub-layer non-reference NAL type) and displays every picture in presentation order, including those the
 * application chose not to send to cuvidDecodePicture (it displays them, by timestamp, among the decoded ones).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libavcodec/avcodec.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
#include "nvdouble.h"

#define MAX_SURF 64
#define MAX_OBJ 16

typedef struct Decoder Decoder;
typedef struct {
  int live;
  DblParserParams p;
  AVCodecParserContext *parser;
  AVCodecContext *pctx; /* parser's context (never opened) */
  AVCodecContext *probe; /* VP9: libavcodec's vp9 parser reports no size or format; a decoder reads headers */
  int num_surfaces;
  int pending[MAX_SURF]; /* decoded or being decoded, not yet displayed */
  long long ts[MAX_SURF];
  int next_idx;
  int seq_width, seq_height, seq_format;
  int in_sequence_cb;
  DblPicParams pic;
  unsigned int slice_offset;
  Decoder *dec;
  int failed;
  uint8_t *stash; /* header-only units (AV1 sequence header OBUs) waiting for the next picture */
  int stash_size;
  uint8_t *joined;
  int decode_called; /* cuvidDecodePicture was called for the current picture */
  int nskipped; /* pictures the application did not decode, waiting for display (ascending timestamps) */
  int skipped_idx[MAX_SURF];
  long long skipped_ts[MAX_SURF];
} Parser;

struct Decoder {
  int live;
  DblDecodeCreateInfo ci;
  AVCodecContext *ctx;
  AVFrame *surf[MAX_SURF];
  int out_queue[256];
  int nout;
  int mapped;
  CUdeviceptr maps[64];
};

static __thread Parser parsers[MAX_OBJ];
static __thread Decoder decoders[MAX_OBJ];

void dbl_nvcuvid_reset(void) {
  for (int i = 0; i < MAX_OBJ; i++) {
    if (parsers[i].live) {
      av_parser_close(parsers[i].parser);
      avcodec_free_context(&parsers[i].pctx);
      avcodec_free_context(&parsers[i].probe);
      av_freep(&parsers[i].stash);
      av_freep(&parsers[i].joined);
    }
    if (decoders[i].live) {
      avcodec_free_context(&decoders[i].ctx);
      for (int s = 0; s < MAX_SURF; s++) av_frame_free(&decoders[i].surf[s]);
    }
    memset(&parsers[i], 0, sizeof parsers[i]);
    memset(&decoders[i], 0, sizeof decoders[i]);
  }
}

#define FAULT(name) do { int _c = dbl_fault(name); if (_c) return _c; } while (0)
#define NEED_CTX(name) do { if (!dbl_has_context()) { dbl_log("%s rc=201 no-current-context", name); return DBL_INVALID_CONTEXT; } } while (0)

static enum AVCodecID av_codec_of(int cuvid) {
  switch (cuvid) {
    case 4: return AV_CODEC_ID_H264;
    case 8: return AV_CODEC_ID_HEVC;
    case 10: return AV_CODEC_ID_VP9;
    case 11: return AV_CODEC_ID_AV1;
    default: return AV_CODEC_ID_NONE;
  }
}

static int all_zero(const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) if (b[i]) return 0;
  return 1;
}

/* ------------------------------------------------------------------ caps */

/* NVDOUBLE_UNSUPPORTED: cudaVideoCodec numbers, comma-separated, this NVDEC does not decode although libavcodec
 * does (a real H200's has no AV1: 11). */
static int dbl_unsupported(int codec) {
  const char *s = getenv("NVDOUBLE_UNSUPPORTED");
  while (s != NULL && *s != 0) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s) break;
    if (v == codec) return 1;
    s = *end == ',' ? end + 1 : end;
  }
  return 0;
}

CUresult cuvidGetDecoderCaps(DblDecodeCaps *c) {
  FAULT("cuvidGetDecoderCaps");
  NEED_CTX("cuvidGetDecoderCaps");
  int ok = av_codec_of(c->eCodecType) != AV_CODEC_ID_NONE && !dbl_unsupported(c->eCodecType) &&
           c->eChromaFormat == 1 &&
           (c->nBitDepthMinus8 == 0 || c->nBitDepthMinus8 == 2);
  int codec = c->eCodecType, chroma = c->eChromaFormat;
  unsigned depth = c->nBitDepthMinus8;
  memset(c, 0, sizeof *c);
  c->eCodecType = codec;
  c->eChromaFormat = chroma;
  c->nBitDepthMinus8 = depth;
  if (ok) {
    c->bIsSupported = 1;
    c->nNumNVDECs = dbl_num_nvdecs;
    c->nOutputFormatMask = depth ? 2 : 1;
    c->nMaxWidth = dbl_max_width;
    c->nMaxHeight = dbl_max_height;
    c->nMaxMBCount = (dbl_max_width / 16) * (dbl_max_height / 16);
    c->nMinWidth = 48;
    c->nMinHeight = 16;
  }
  dbl_log("cuvidGetDecoderCaps rc=0 codec=%d supported=%d", codec, ok);
  return DBL_SUCCESS;
}

/* ------------------------------------------------------------------ decoder */

CUresult cuvidCreateDecoder(CUvideodecoder *out, DblDecodeCreateInfo *ci) {
  FAULT("cuvidCreateDecoder");
  NEED_CTX("cuvidCreateDecoder");
  const char *why = NULL;
  if (av_codec_of(ci->CodecType) == AV_CODEC_ID_NONE || dbl_unsupported(ci->CodecType)) why = "codec";
  else if (ci->ChromaFormat != 1) why = "chroma";
  else if (ci->OutputFormat != (ci->bitDepthMinus8 ? 1 : 0)) why = "output-format";
  /* NVDEC refuses more than 32 decode surfaces (reported from the field: cuvidCreateDecoder fails) */
  else if (ci->ulNumDecodeSurfaces < 1 || ci->ulNumDecodeSurfaces > 32) why = "num-decode-surfaces";
  else if (ci->ulNumOutputSurfaces < 1 || ci->ulNumOutputSurfaces > 64) why = "num-output-surfaces";
  else if (ci->ulWidth > dbl_max_width || ci->ulHeight > dbl_max_height || ci->ulWidth < 48 || ci->ulHeight < 16) why = "size";
  else if (ci->ulMaxWidth && (ci->ulMaxWidth < ci->ulWidth || ci->ulMaxHeight < ci->ulHeight)) why = "max-size";
  else if (ci->ulTargetWidth == 0 || ci->ulTargetHeight == 0 || (ci->ulTargetWidth & 1) || (ci->ulTargetHeight & 1)) why = "target-size";
  else if (ci->display_area.right > (long)ci->ulWidth || ci->display_area.bottom > (long)ci->ulHeight ||
           ci->display_area.left < 0 || ci->display_area.top < 0 ||
           (ci->display_area.right && ci->display_area.right <= ci->display_area.left)) why = "display-area";
  else if (ci->Reserved1 || !all_zero(ci->Reserved2, sizeof ci->Reserved2) || ci->ulCreationFlags > 4) why = "reserved-nonzero";
  if (why) { dbl_log("cuvidCreateDecoder rc=1 invalid=%s", why); return DBL_INVALID_VALUE; }
  for (int i = 0; i < MAX_OBJ; i++) {
    Decoder *d = &decoders[i];
    if (d->live) continue;
    memset(d, 0, sizeof *d);
    const AVCodec *codec = avcodec_find_decoder(av_codec_of(ci->CodecType));
    d->ctx = avcodec_alloc_context3(codec);
    d->ctx->thread_count = 1;
    if (avcodec_open2(d->ctx, codec, NULL) < 0) { avcodec_free_context(&d->ctx); return DBL_UNKNOWN; }
    d->ci = *ci;
    d->live = 1;
    *out = d;
    dbl_log("cuvidCreateDecoder rc=0 h=%p w=%lu h=%lu surfaces=%lu target=%lux%lu", (void *)d, ci->ulWidth, ci->ulHeight,
            ci->ulNumDecodeSurfaces, ci->ulTargetWidth, ci->ulTargetHeight);
    return DBL_SUCCESS;
  }
  return DBL_OUT_OF_MEMORY;
}

static Decoder *find_decoder(CUvideodecoder h) {
  for (int i = 0; i < MAX_OBJ; i++) if (decoders[i].live && &decoders[i] == h) return &decoders[i];
  return NULL;
}

CUresult cuvidDestroyDecoder(CUvideodecoder h) {
  Decoder *d = find_decoder(h);
  if (!d) { dbl_log("cuvidDestroyDecoder rc=400 h=%p", h); return DBL_INVALID_HANDLE; }
  if (d->mapped) dbl_log("cuvidDestroyDecoder warning mapped-frames-outstanding=%d", d->mapped);
  avcodec_free_context(&d->ctx);
  for (int s = 0; s < MAX_SURF; s++) av_frame_free(&d->surf[s]);
  for (int i = 0; i < MAX_OBJ; i++) if (parsers[i].dec == d) parsers[i].dec = NULL;
  d->live = 0;
  dbl_log("cuvidDestroyDecoder rc=0 h=%p", h);
  return DBL_SUCCESS;
}

CUresult cuvidReconfigureDecoder(CUvideodecoder h, DblReconfigureInfo *r) {
  FAULT("cuvidReconfigureDecoder");
  NEED_CTX("cuvidReconfigureDecoder");
  Decoder *d = find_decoder(h);
  if (!d) return DBL_INVALID_HANDLE;
  int in_cb = 0;
  for (int i = 0; i < MAX_OBJ; i++) in_cb |= parsers[i].live && parsers[i].in_sequence_cb;
  if (!in_cb || r->ulWidth > d->ci.ulMaxWidth || r->ulHeight > d->ci.ulMaxHeight || r->ulNumDecodeSurfaces < 1 ||
      r->ulNumDecodeSurfaces > d->ci.ulNumDecodeSurfaces || (r->ulTargetWidth & 1) || (r->ulTargetHeight & 1) ||
      !all_zero(r->reserved1, sizeof r->reserved1) || !all_zero(r->reserved2, sizeof r->reserved2)) {
    dbl_log("cuvidReconfigureDecoder rc=1 invalid in_cb=%d", in_cb);
    return DBL_INVALID_VALUE;
  }
  d->ci.ulWidth = r->ulWidth;
  d->ci.ulHeight = r->ulHeight;
  d->ci.ulTargetWidth = r->ulTargetWidth;
  d->ci.ulTargetHeight = r->ulTargetHeight;
  d->ci.ulNumDecodeSurfaces = r->ulNumDecodeSurfaces;
  d->ci.display_area = r->display_area;
  d->ci.target_rect = r->target_rect;
  avcodec_flush_buffers(d->ctx);
  for (int s = 0; s < MAX_SURF; s++) av_frame_free(&d->surf[s]);
  d->nout = 0;
  dbl_log("cuvidReconfigureDecoder rc=0 h=%p w=%u h=%u target=%ux%u", h, r->ulWidth, r->ulHeight, r->ulTargetWidth,
          r->ulTargetHeight);
  return DBL_SUCCESS;
}

static Parser *parser_of_pic(DblPicParams *pic) {
  for (int i = 0; i < MAX_OBJ; i++) if (parsers[i].live && &parsers[i].pic == pic) return &parsers[i];
  return NULL;
}

static void drain(Decoder *d) {
  AVFrame *f = av_frame_alloc();
  while (avcodec_receive_frame(d->ctx, f) == 0) {
    int idx = (int)f->pts; /* the packet's tag: the surface it was decoded into */
    if (idx >= 0 && idx < MAX_SURF && d->nout < 256) {
      if (!d->surf[idx]) d->surf[idx] = av_frame_alloc();
      av_frame_unref(d->surf[idx]);
      av_frame_move_ref(d->surf[idx], f);
      d->out_queue[d->nout++] = idx;
    }
    av_frame_unref(f);
  }
  av_frame_free(&f);
}

CUresult cuvidDecodePicture(CUvideodecoder h, DblPicParams *pic) {
  FAULT("cuvidDecodePicture");
  NEED_CTX("cuvidDecodePicture");
  Decoder *d = find_decoder(h);
  Parser *p = parser_of_pic(pic);
  if (!d || !p) { dbl_log("cuvidDecodePicture rc=400"); return DBL_INVALID_HANDLE; }
  if (pic->CurrPicIdx < 0 || pic->CurrPicIdx >= (int)d->ci.ulNumDecodeSurfaces) {
    dbl_log("cuvidDecodePicture rc=1 picidx=%d beyond-decoder-surfaces=%lu", pic->CurrPicIdx, d->ci.ulNumDecodeSurfaces);
    return DBL_INVALID_VALUE;
  }
  p->dec = d;
  p->decode_called = 1;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  AVPacket *pkt = av_packet_alloc();
  av_new_packet(pkt, pic->nBitstreamDataLen);
  memcpy(pkt->data, pic->pBitstreamData, pic->nBitstreamDataLen);
  pkt->pts = pic->CurrPicIdx;
  pkt->dts = AV_NOPTS_VALUE;
  int rc = avcodec_send_packet(d->ctx, pkt);
  av_packet_free(&pkt);
  if (rc < 0 && rc != AVERROR(EAGAIN)) dbl_log("cuvidDecodePicture decode-error=%d", rc);
  drain(d);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  dbl_decoder_busy((t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
  return DBL_SUCCESS;
}

/* Copies (or crops / scales) a decoded frame into an NV12 device surface at `pitch`. */
static int to_nv12(Decoder *d, AVFrame *f, unsigned char *dst, unsigned pitch, unsigned tw, unsigned th, unsigned ah) {
  DblShortRect a = d->ci.display_area;
  /* A real surface is the coded size: an unset display area shows all of it, the padding rows included. libavcodec
     hands over only the picture, so an area beyond it (a stale or missing display area) fails loudly instead. */
  int left = a.left, top = a.top, right = a.right ? a.right : (int)d->ci.ulWidth, bottom = a.bottom ? a.bottom : (int)d->ci.ulHeight;
  if (right > f->width || bottom > f->height) {
    dbl_log("cuvidMapVideoFrame64 display-area %dx%d beyond the picture %dx%d", right, bottom, f->width, f->height);
    return -1;
  }
  int cw = right - left, ch = bottom - top;
  unsigned char *luma = dst, *uv = dst + (size_t)pitch * ah;
  if (f->format != AV_PIX_FMT_YUV420P && f->format != AV_PIX_FMT_YUVJ420P) return -1;
  if ((unsigned)cw == tw && (unsigned)ch == th && !(left & 1) && !(top & 1)) {
    for (unsigned y = 0; y < th; y++) memcpy(luma + (size_t)y * pitch, f->data[0] + (size_t)(y + top) * f->linesize[0] + left, tw);
    for (unsigned y = 0; y < th / 2; y++) {
      const unsigned char *u = f->data[1] + (size_t)(y + top / 2) * f->linesize[1] + left / 2;
      const unsigned char *v = f->data[2] + (size_t)(y + top / 2) * f->linesize[2] + left / 2;
      unsigned char *o = uv + (size_t)y * pitch;
      for (unsigned x = 0; x < tw / 2; x++) { o[2 * x] = u[x]; o[2 * x + 1] = v[x]; }
    }
    return 0;
  }
  struct SwsContext *sws = sws_getContext(cw, ch, f->format, tw, th, AV_PIX_FMT_NV12, SWS_BICUBIC, NULL, NULL, NULL);
  if (!sws) return -1;
  const uint8_t *src[3] = { f->data[0] + (size_t)top * f->linesize[0] + left,
                            f->data[1] + (size_t)(top / 2) * f->linesize[1] + left / 2,
                            f->data[2] + (size_t)(top / 2) * f->linesize[2] + left / 2 };
  uint8_t *dsts[2] = { luma, uv };
  int dstride[2] = { (int)pitch, (int)pitch };
  sws_scale(sws, src, f->linesize, 0, ch, dsts, dstride);
  sws_freeContext(sws);
  return 0;
}

CUresult cuvidMapVideoFrame64(CUvideodecoder h, int idx, unsigned long long *dptr, unsigned int *pitch, DblProcParams *vpp) {
  FAULT("cuvidMapVideoFrame64");
  NEED_CTX("cuvidMapVideoFrame64");
  Decoder *d = find_decoder(h);
  if (!d) return DBL_INVALID_HANDLE;
  if (idx < 0 || idx >= MAX_SURF || !d->surf[idx] || !vpp || !dptr || !pitch) { dbl_log("cuvidMapVideoFrame64 rc=1 idx=%d", idx); return DBL_INVALID_VALUE; }
  if (!dbl_stream_valid(vpp->output_stream) || vpp->reserved_flags || vpp->reserved_zero || vpp->raw_input_dptr ||
      vpp->raw_output_dptr || !all_zero(vpp->Reserved, sizeof vpp->Reserved)) {
    dbl_log("cuvidMapVideoFrame64 rc=1 bad-proc-params");
    return DBL_INVALID_VALUE;
  }
  if (d->mapped >= (int)d->ci.ulNumOutputSurfaces) { dbl_log("cuvidMapVideoFrame64 rc=205 too-many-mapped"); return DBL_MAP_FAILED; }
  unsigned tw = d->ci.ulTargetWidth, th = d->ci.ulTargetHeight, ah = (th + 1) & ~1u;
  unsigned p = ((tw + 1 + 255) / 256) * 256; /* always wider than the width */
  CUdeviceptr mem;
  if (dbl_dev_alloc((size_t)p * (ah + ah / 2), &mem)) return DBL_OUT_OF_MEMORY;
  if (to_nv12(d, d->surf[idx], dbl_dev_resolve(mem, 1), p, tw, th, ah) < 0) { dbl_dev_free(mem); return DBL_NOT_SUPPORTED; }
  d->maps[d->mapped++] = mem;
  *dptr = mem;
  *pitch = p;
  dbl_log("cuvidMapVideoFrame64 rc=0 h=0x%llx idx=%d pitch=%u", mem, idx, p);
  return DBL_SUCCESS;
}

CUresult cuvidUnmapVideoFrame64(CUvideodecoder h, unsigned long long dptr) {
  Decoder *d = find_decoder(h);
  if (!d) return DBL_INVALID_HANDLE;
  for (int i = 0; i < d->mapped; i++) {
    if (d->maps[i] != dptr) continue;
    dbl_dev_free(dptr);
    d->maps[i] = d->maps[--d->mapped];
    dbl_log("cuvidUnmapVideoFrame64 rc=0 h=0x%llx", dptr);
    return DBL_SUCCESS;
  }
  dbl_log("cuvidUnmapVideoFrame64 rc=1 h=0x%llx not-mapped", dptr);
  return DBL_INVALID_VALUE;
}

/* ------------------------------------------------------------------ parser */

CUresult cuvidCreateVideoParser(CUvideoparser *out, DblParserParams *pp) {
  FAULT("cuvidCreateVideoParser");
  enum AVCodecID id = av_codec_of(pp->CodecType);
  const char *why = NULL;
  if (id == AV_CODEC_ID_NONE) why = "codec";
  else if (!pp->pfnSequenceCallback || !pp->pfnDecodePicture || !pp->pfnDisplayPicture) why = "callback-null";
  else if (!all_zero(pp->uReserved1, sizeof pp->uReserved1) || !all_zero(pp->pvReserved2, sizeof pp->pvReserved2)) why = "reserved-nonzero";
  else if (pp->ulMaxNumDecodeSurfaces < 1 || pp->ulMaxNumDecodeSurfaces > MAX_SURF) why = "max-decode-surfaces";
  else if (pp->ulErrorThreshold > 100) why = "error-threshold";
  if (why) { dbl_log("cuvidCreateVideoParser rc=1 invalid=%s", why); return DBL_INVALID_VALUE; }
  for (int i = 0; i < MAX_OBJ; i++) {
    Parser *p = &parsers[i];
    if (p->live) continue;
    memset(p, 0, sizeof *p);
    p->parser = av_parser_init(id);
    p->pctx = avcodec_alloc_context3(NULL);
    p->pctx->codec_id = id;
    p->p = *pp;
    p->num_surfaces = pp->ulMaxNumDecodeSurfaces;
    p->live = 1;
    *out = p;
    unsigned seqhdr = 0;
    if (pp->pExtVideoInfo) {
      const DblVideoFormatEx *ext = pp->pExtVideoInfo;
      seqhdr = ext->format.seqhdr_data_length;
      if (seqhdr > sizeof ext->seqhdr.raw_seqhdr_data) seqhdr = 0;
      /* The parser knows the stream's sequence header before the first packet (the real one parses it). */
      if (seqhdr && id == AV_CODEC_ID_AV1) {
        p->pctx->extradata = av_mallocz(seqhdr + AV_INPUT_BUFFER_PADDING_SIZE);
        memcpy(p->pctx->extradata, ext->seqhdr.raw_seqhdr_data, seqhdr);
        p->pctx->extradata_size = seqhdr;
      }
    }
    dbl_log("cuvidCreateVideoParser rc=0 h=%p codec=%d seqhdr=%u", (void *)p, pp->CodecType, seqhdr);
    return DBL_SUCCESS;
  }
  return DBL_OUT_OF_MEMORY;
}

CUresult cuvidDestroyVideoParser(CUvideoparser h) {
  for (int i = 0; i < MAX_OBJ; i++) {
    Parser *p = &parsers[i];
    if (!p->live || p != h) continue;
    av_parser_close(p->parser);
    avcodec_free_context(&p->pctx);
    avcodec_free_context(&p->probe);
    av_freep(&p->stash);
    av_freep(&p->joined);
    p->live = 0;
    dbl_log("cuvidDestroyVideoParser rc=0 h=%p", h);
    return DBL_SUCCESS;
  }
  dbl_log("cuvidDestroyVideoParser rc=400 h=%p", h);
  return DBL_INVALID_HANDLE;
}

static int display(Parser *p, int idx) {
  DblDispInfo info = { idx, 1, 1, 0, p->ts[idx] };
  p->pending[idx] = 0;
  return p->p.pfnDisplayPicture(p->p.pUserData, &info);
}

/* Displays the undecoded pictures presented before `ts`. */
static int display_skipped(Parser *p, long long ts) {
  int n = 0;
  while (n < p->nskipped && p->skipped_ts[n] < ts) n++;
  for (int i = 0; i < n; i++) {
    if (!display(p, p->skipped_idx[i])) return 0;
  }
  memmove(p->skipped_idx, p->skipped_idx + n, (p->nskipped - n) * sizeof p->skipped_idx[0]);
  memmove(p->skipped_ts, p->skipped_ts + n, (p->nskipped - n) * sizeof p->skipped_ts[0]);
  p->nskipped -= n;
  return 1;
}

static int display_ready(Parser *p) {
  Decoder *d = p->dec;
  if (!d) return 1;
  for (int i = 0; i < d->nout; i++) {
    int idx = d->out_queue[i];
    if (!display_skipped(p, p->ts[idx]) || !display(p, idx)) { d->nout = 0; return 0; }
  }
  d->nout = 0;
  return 1;
}

/* A picture the application did not decode: displayed in timestamp order among the decoded ones. */
static void note_skipped(Parser *p, int idx) {
  int at = p->nskipped;
  while (at > 0 && p->skipped_ts[at - 1] > p->ts[idx]) at--;
  memmove(p->skipped_idx + at + 1, p->skipped_idx + at, (p->nskipped - at) * sizeof p->skipped_idx[0]);
  memmove(p->skipped_ts + at + 1, p->skipped_ts + at, (p->nskipped - at) * sizeof p->skipped_ts[0]);
  p->skipped_idx[at] = idx;
  p->skipped_ts[at] = p->ts[idx];
  p->nskipped++;
}

/* ref_pic_flag as the real parser sets it: H.264 nal_ref_idc of the first slice; HEVC: not a sub-layer
   non-reference picture (TRAIL_N, TSA_N, STSA_N, RADL_N, RASL_N, RSV_VCL_N10/12/14; one temporal layer). */
static int is_reference(int codec, const uint8_t *d, int size) {
  if (codec != 4 && codec != 8) return 1;
  for (int i = 0; i + 3 < size; i++) {
    if (d[i] != 0 || d[i + 1] != 0 || d[i + 2] != 1) continue;
    uint8_t h = d[i + 3];
    if (codec == 4) {
      int type = h & 31;
      if (type == 1 || type == 5) return (h >> 5) & 3 ? 1 : 0;
    } else {
      int type = (h >> 1) & 63;
      if (type < 32) return type <= 14 && type % 2 == 0 ? 0 : 1;
    }
  }
  return 1;
}

/* VP9 keyframes: the frame size and pixel format from the uncompressed header, read by a private decoder. */
static void probe_vp9(Parser *p, const uint8_t *data, int size) {
  AVCodecParserContext *s = p->parser;
  if (!p->probe) {
    const AVCodec *c = avcodec_find_decoder(AV_CODEC_ID_VP9);
    p->probe = avcodec_alloc_context3(c);
    p->probe->thread_count = 1;
    if (avcodec_open2(p->probe, c, NULL) < 0) { avcodec_free_context(&p->probe); return; }
  }
  AVPacket *pkt = av_packet_alloc();
  AVFrame *f = av_frame_alloc();
  av_new_packet(pkt, size);
  memcpy(pkt->data, data, size);
  if (avcodec_send_packet(p->probe, pkt) == 0) while (avcodec_receive_frame(p->probe, f) == 0) av_frame_unref(f);
  av_packet_free(&pkt);
  av_frame_free(&f);
  s->width = p->probe->width;
  s->height = p->probe->height;
  s->format = p->probe->pix_fmt;
  p->pctx->colorspace = p->probe->colorspace;
  p->pctx->color_range = p->probe->color_range;
}

static int sequence(Parser *p, const uint8_t *data, int size, int key) {
  AVCodecParserContext *s = p->parser;
  if (p->p.CodecType == 10 && (key || !p->seq_width)) probe_vp9(p, data, size);
  if (s->width <= 0 || s->height <= 0) return 1;
  if (s->width == p->seq_width && s->height == p->seq_height && s->format == p->seq_format) return 1;
  const AVPixFmtDescriptor *desc = av_pix_fmt_desc_get(s->format);
  int depth = desc ? desc->comp[0].depth : 8;
  DblVideoFormat f;
  memset(&f, 0, sizeof f);
  f.codec = p->p.CodecType;
  f.frame_rate.numerator = 25;
  f.frame_rate.denominator = 1;
  f.progressive_sequence = 1;
  f.bit_depth_luma_minus8 = f.bit_depth_chroma_minus8 = depth - 8;
  f.min_num_decode_surfaces = 8; /* DPB (up to 16 refs in general; these clips use few) + reorder + 1 */
  int align = p->p.CodecType == 4 ? 16 : 8;
  f.coded_width = (s->width + align - 1) / align * align;
  f.coded_height = (s->height + align - 1) / align * align;
  f.display_area.right = s->width;
  f.display_area.bottom = s->height;
  f.chroma_format = desc && desc->log2_chroma_w == 1 && desc->log2_chroma_h == 1 ? 1 : desc && desc->log2_chroma_w ? 2 : 3;
  f.display_aspect_ratio.x = s->width;
  f.display_aspect_ratio.y = s->height;
  f.video_signal_description.video_format = 5;
  f.video_signal_description.video_full_range_flag = p->pctx->color_range == AVCOL_RANGE_JPEG || s->format == AV_PIX_FMT_YUVJ420P;
  f.video_signal_description.color_primaries = p->pctx->color_primaries;
  f.video_signal_description.transfer_characteristics = p->pctx->color_trc;
  f.video_signal_description.matrix_coefficients = p->pctx->colorspace;
  p->in_sequence_cb = 1;
  int rc = p->p.pfnSequenceCallback(p->p.pUserData, &f);
  p->in_sequence_cb = 0;
  dbl_log("sequence-callback ret=%d coded=%ux%u min_surfaces=%d", rc, f.coded_width, f.coded_height, f.min_num_decode_surfaces);
  if (rc == 0) return 0;
  if (rc > 1) p->num_surfaces = rc > MAX_SURF ? MAX_SURF : rc;
  p->seq_width = s->width;
  p->seq_height = s->height;
  p->seq_format = s->format;
  return 1;
}

/* leb128 as in the AV1 spec (4.10.5); -1 when it runs past `end`. */
static long long leb128(const uint8_t **q, const uint8_t *end) {
  long long v = 0;
  for (int i = 0; i < 8; i++) {
    if (*q >= end) return -1;
    uint8_t b = *(*q)++;
    v |= (long long)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) return v;
  }
  return -1;
}

/* True when an AV1 temporal unit holds a frame (OBU_FRAME_HEADER 3, OBU_FRAME 6, OBU_REDUNDANT 7, TILE_GROUP 4). */
static int av1_has_frame(const uint8_t *d, int size) {
  const uint8_t *q = d, *end = d + size;
  while (q < end) {
    uint8_t h = *q++;
    int type = (h >> 3) & 15;
    if (h & 4) q++; /* extension byte */
    if (!(h & 2)) return type == 3 || type == 6 || type == 4 || type == 7; /* no size field: rest of unit */
    long long len = leb128(&q, end);
    if (len < 0 || len > end - q) return 1; /* malformed: let the decoder report it */
    if (type == 3 || type == 6 || type == 4 || type == 7) return 1;
    q += len;
  }
  return 0;
}

static CUresult picture(Parser *p, const uint8_t *data, int size, long long pts, int key) {
  if (p->p.CodecType == 11 && !av1_has_frame(data, size)) { /* sequence header / metadata only */
    p->stash = av_realloc(p->stash, p->stash_size + size);
    memcpy(p->stash + p->stash_size, data, size);
    p->stash_size += size;
    dbl_log("parser header-only-unit size=%d", size);
    return DBL_SUCCESS;
  }
  if (p->stash_size) {
    av_freep(&p->joined);
    p->joined = av_malloc(p->stash_size + size);
    memcpy(p->joined, p->stash, p->stash_size);
    memcpy(p->joined + p->stash_size, data, size);
    data = p->joined;
    size += p->stash_size;
    av_freep(&p->stash);
    p->stash_size = 0;
  }
  if (!sequence(p, data, size, key)) { p->failed = 1; return DBL_UNKNOWN; }
  if (!p->seq_width) { dbl_log("parser skipped picture before any sequence header"); return DBL_SUCCESS; }
  int idx = -1;
  for (int k = 0; k < p->num_surfaces; k++) {
    int c = (p->next_idx + k) % p->num_surfaces;
    if (!p->pending[c]) { idx = c; break; }
  }
  if (idx < 0) {
    dbl_log("parser rc=999 no-free-decode-surface num_surfaces=%d", p->num_surfaces);
    p->failed = 1;
    return DBL_UNKNOWN;
  }
  p->next_idx = (idx + 1) % p->num_surfaces;
  memset(&p->pic, 0, sizeof p->pic);
  p->pic.PicWidthInMbs = (p->seq_width + 15) / 16;
  p->pic.FrameHeightInMbs = (p->seq_height + 15) / 16;
  p->pic.CurrPicIdx = idx;
  p->pic.nBitstreamDataLen = size;
  p->pic.pBitstreamData = data;
  p->pic.nNumSlices = 1;
  p->pic.pSliceDataOffsets = &p->slice_offset;
  p->pic.ref_pic_flag = is_reference(p->p.CodecType, data, size);
  p->pic.intra_pic_flag = key;
  p->pending[idx] = 1;
  p->ts[idx] = pts;
  p->decode_called = 0;
  if (!p->p.pfnDecodePicture(p->p.pUserData, &p->pic)) { p->failed = 1; return DBL_UNKNOWN; }
  if (!p->decode_called) {
    dbl_log("parser picture idx=%d not decoded ref=%d", idx, p->pic.ref_pic_flag);
    note_skipped(p, idx);
  }
  if (!display_ready(p)) { p->failed = 1; return DBL_UNKNOWN; }
  return DBL_SUCCESS;
}

CUresult cuvidParseVideoData(CUvideoparser h, DblSourcePacket *pkt) {
  FAULT("cuvidParseVideoData");
  Parser *p = NULL;
  for (int i = 0; i < MAX_OBJ; i++) if (parsers[i].live && &parsers[i] == h) p = &parsers[i];
  if (!p || !pkt) return DBL_INVALID_HANDLE;
  if (p->failed) return DBL_UNKNOWN;
  int eos = pkt->flags & 1;
  long long pts = (pkt->flags & 2) ? pkt->timestamp : AV_NOPTS_VALUE;
  const uint8_t *in = pkt->payload;
  int left = (int)pkt->payload_size;
  if (left > 0 && !in) return DBL_INVALID_VALUE;
  while (left > 0 || eos) {
    uint8_t *out = NULL;
    int out_size = 0;
    int used = av_parser_parse2(p->parser, p->pctx, &out, &out_size, left > 0 ? in : NULL, left > 0 ? left : 0, pts,
                                AV_NOPTS_VALUE, 0);
    if (left > 0) { in += used; left -= used; }
    if (out_size > 0) {
      CUresult rc = picture(p, out, out_size, p->parser->pts, p->parser->key_frame == 1);
      if (rc) return rc;
    }
    if (left <= 0 && eos && out_size == 0) break;
  }
  if (eos && p->dec) {
    avcodec_send_packet(p->dec->ctx, NULL);
    drain(p->dec);
    if (!display_ready(p) || !display_skipped(p, 0x7fffffffffffffffLL)) return DBL_UNKNOWN;
    avcodec_flush_buffers(p->dec->ctx);
  }
  if (eos) dbl_log("cuvidParseVideoData eos");
  return DBL_SUCCESS;
}
