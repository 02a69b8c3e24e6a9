/**
 * Symbol tables for the five FFmpeg libraries sluice calls. The main tables list functions whose C prototypes
 * are the same in every supported release (4.3 to 8.1). Channel layouts are the one API that differs: FFmpeg
 * 5.1 added the `AVChannelLayout` API and 7.0 removed the channel mask one, so each has its own small tables,
 * and `ffi/ffmpeg/library.ts` opens the pair the loaded release has. Every argument is commented with its C
 * type. All calls are synchronous: per-frame work runs as synchronous
 * calls inside Workers, where a `nonblocking` call would cost ~70 µs of thread hand-off each.
 * @module
 */

/** libavutil. */
export const AVUTIL_SYMBOLS = {
  avutil_version: { parameters: [], result: "u32" }, // unsigned avutil_version(void)
  av_strerror: {
    // int av_strerror(int errnum, char *errbuf, size_t errbuf_size)
    parameters: ["i32", "buffer", "usize"],
    result: "i32",
  },
  av_log_set_level: { parameters: ["i32"], result: "void" }, // void av_log_set_level(int level)
  av_frame_alloc: { parameters: [], result: "pointer" }, // AVFrame *av_frame_alloc(void)
  av_frame_free: { parameters: ["buffer"], result: "void" }, // void av_frame_free(AVFrame **frame)
  av_frame_unref: { parameters: ["pointer"], result: "void" }, // void av_frame_unref(AVFrame *frame)
  av_frame_get_buffer: { parameters: ["pointer", "i32"], result: "i32" }, // int av_frame_get_buffer(AVFrame *frame, int align)
  av_frame_make_writable: { parameters: ["pointer"], result: "i32" }, // int av_frame_make_writable(AVFrame *frame)
  av_malloc: { parameters: ["usize"], result: "pointer" }, // void *av_malloc(size_t size)
  av_free: { parameters: ["pointer"], result: "void" }, // void av_free(void *ptr)
  av_freep: { parameters: ["buffer"], result: "void" }, // void av_freep(void *ptr) -- ptr is a void**
  av_dict_set: {
    // int av_dict_set(AVDictionary **pm, const char *key, const char *value, int flags)
    parameters: ["buffer", "buffer", "buffer", "i32"],
    result: "i32",
  },
  av_dict_free: { parameters: ["buffer"], result: "void" }, // void av_dict_free(AVDictionary **m)
  av_opt_set_int: {
    // int av_opt_set_int(void *obj, const char *name, int64_t val, int search_flags)
    parameters: ["pointer", "buffer", "i64", "i32"],
    result: "i32",
  },
  av_opt_set: {
    // int av_opt_set(void *obj, const char *name, const char *val, int search_flags)
    parameters: ["pointer", "buffer", "buffer", "i32"],
    result: "i32",
  },
  av_get_pix_fmt_name: { parameters: ["i32"], result: "pointer" }, // const char *av_get_pix_fmt_name(enum AVPixelFormat pix_fmt)
  av_get_pix_fmt: { parameters: ["buffer"], result: "i32" }, // enum AVPixelFormat av_get_pix_fmt(const char *name)
  av_pix_fmt_desc_get: { parameters: ["i32"], result: "pointer" }, // const AVPixFmtDescriptor *av_pix_fmt_desc_get(enum AVPixelFormat pix_fmt)
  av_display_rotation_get: { parameters: ["pointer"], result: "f64" }, // double av_display_rotation_get(const int32_t matrix[9])
  av_opt_get_int: {
    // int av_opt_get_int(void *obj, const char *name, int search_flags, int64_t *out_val)
    parameters: ["pointer", "buffer", "i32", "buffer"],
    result: "i32",
  },
  av_get_bytes_per_sample: { parameters: ["i32"], result: "i32" }, // int av_get_bytes_per_sample(enum AVSampleFormat sample_fmt)
  av_sample_fmt_is_planar: { parameters: ["i32"], result: "i32" }, // int av_sample_fmt_is_planar(enum AVSampleFormat sample_fmt)
  av_version_info: { parameters: [], result: "pointer" }, // const char *av_version_info(void)
  av_image_get_buffer_size: {
    // int av_image_get_buffer_size(enum AVPixelFormat pix_fmt, int width, int height, int align)
    parameters: ["i32", "i32", "i32", "i32"],
    result: "i32",
  },
} as const satisfies Deno.ForeignLibraryInterface;

/** libavcodec. */
export const AVCODEC_SYMBOLS = {
  avcodec_version: { parameters: [], result: "u32" }, // unsigned avcodec_version(void)
  avcodec_find_decoder: { parameters: ["i32"], result: "pointer" }, // const AVCodec *avcodec_find_decoder(enum AVCodecID id)
  avcodec_find_decoder_by_name: { parameters: ["buffer"], result: "pointer" }, // const AVCodec *avcodec_find_decoder_by_name(const char *name)
  avcodec_find_encoder_by_name: { parameters: ["buffer"], result: "pointer" }, // const AVCodec *avcodec_find_encoder_by_name(const char *name)
  avcodec_alloc_context3: { parameters: ["pointer"], result: "pointer" }, // AVCodecContext *avcodec_alloc_context3(const AVCodec *codec)
  avcodec_free_context: { parameters: ["buffer"], result: "void" }, // void avcodec_free_context(AVCodecContext **avctx)
  avcodec_parameters_alloc: { parameters: [], result: "pointer" }, // AVCodecParameters *avcodec_parameters_alloc(void)
  avcodec_parameters_free: { parameters: ["buffer"], result: "void" }, // void avcodec_parameters_free(AVCodecParameters **par)
  avcodec_parameters_copy: { parameters: ["pointer", "pointer"], result: "i32" }, // int avcodec_parameters_copy(AVCodecParameters *dst, const AVCodecParameters *src)
  avcodec_parameters_to_context: { parameters: ["pointer", "pointer"], result: "i32" }, // int avcodec_parameters_to_context(AVCodecContext *codec, const AVCodecParameters *par)
  avcodec_parameters_from_context: { parameters: ["pointer", "pointer"], result: "i32" }, // int avcodec_parameters_from_context(AVCodecParameters *par, const AVCodecContext *codec)
  avcodec_open2: {
    // int avcodec_open2(AVCodecContext *avctx, const AVCodec *codec, AVDictionary **options)
    parameters: ["pointer", "pointer", "buffer"],
    result: "i32",
  },
  avcodec_send_packet: { parameters: ["pointer", "pointer"], result: "i32" }, // int avcodec_send_packet(AVCodecContext *avctx, const AVPacket *avpkt)
  avcodec_receive_frame: { parameters: ["pointer", "pointer"], result: "i32" }, // int avcodec_receive_frame(AVCodecContext *avctx, AVFrame *frame)
  avcodec_send_frame: { parameters: ["pointer", "pointer"], result: "i32" }, // int avcodec_send_frame(AVCodecContext *avctx, const AVFrame *frame)
  avcodec_receive_packet: { parameters: ["pointer", "pointer"], result: "i32" }, // int avcodec_receive_packet(AVCodecContext *avctx, AVPacket *avpkt)
  avcodec_flush_buffers: { parameters: ["pointer"], result: "void" }, // void avcodec_flush_buffers(AVCodecContext *avctx)
  avcodec_get_name: { parameters: ["i32"], result: "pointer" }, // const char *avcodec_get_name(enum AVCodecID id)
  avcodec_profile_name: { parameters: ["i32", "i32"], result: "pointer" }, // const char *avcodec_profile_name(enum AVCodecID codec_id, int profile)
  av_packet_alloc: { parameters: [], result: "pointer" }, // AVPacket *av_packet_alloc(void)
  av_packet_free: { parameters: ["buffer"], result: "void" }, // void av_packet_free(AVPacket **pkt)
  av_packet_unref: { parameters: ["pointer"], result: "void" }, // void av_packet_unref(AVPacket *pkt)
  av_new_packet: { parameters: ["pointer", "i32"], result: "i32" }, // int av_new_packet(AVPacket *pkt, int size)
  av_bsf_get_by_name: { parameters: ["buffer"], result: "pointer" }, // const AVBitStreamFilter *av_bsf_get_by_name(const char *name)
  av_bsf_alloc: { parameters: ["pointer", "buffer"], result: "i32" }, // int av_bsf_alloc(const AVBitStreamFilter *filter, AVBSFContext **ctx)
  av_bsf_init: { parameters: ["pointer"], result: "i32" }, // int av_bsf_init(AVBSFContext *ctx)
  av_bsf_send_packet: { parameters: ["pointer", "pointer"], result: "i32" }, // int av_bsf_send_packet(AVBSFContext *ctx, AVPacket *pkt)
  av_bsf_receive_packet: { parameters: ["pointer", "pointer"], result: "i32" }, // int av_bsf_receive_packet(AVBSFContext *ctx, AVPacket *pkt)
  av_bsf_free: { parameters: ["buffer"], result: "void" }, // void av_bsf_free(AVBSFContext **ctx)
  av_bsf_flush: { parameters: ["pointer"], result: "void" }, // void av_bsf_flush(AVBSFContext *ctx)
} as const satisfies Deno.ForeignLibraryInterface;

/** libavformat. */
export const AVFORMAT_SYMBOLS = {
  avformat_version: { parameters: [], result: "u32" }, // unsigned avformat_version(void)
  avformat_alloc_context: { parameters: [], result: "pointer" }, // AVFormatContext *avformat_alloc_context(void)
  av_find_input_format: { parameters: ["buffer"], result: "pointer" }, // const AVInputFormat *av_find_input_format(const char *short_name)
  avformat_free_context: { parameters: ["pointer"], result: "void" }, // void avformat_free_context(AVFormatContext *s)
  avformat_open_input: {
    // int avformat_open_input(AVFormatContext **ps, const char *url, const AVInputFormat *fmt, AVDictionary **options)
    parameters: ["buffer", "buffer", "pointer", "buffer"],
    result: "i32",
  },
  avformat_close_input: { parameters: ["buffer"], result: "void" }, // void avformat_close_input(AVFormatContext **s)
  avformat_find_stream_info: {
    // int avformat_find_stream_info(AVFormatContext *ic, AVDictionary **options)
    parameters: ["pointer", "pointer"],
    result: "i32",
  },
  av_find_best_stream: {
    // int av_find_best_stream(AVFormatContext *ic, enum AVMediaType type, int wanted_stream_nb,
    //                         int related_stream, const AVCodec **decoder_ret, int flags)
    parameters: ["pointer", "i32", "i32", "i32", "pointer", "i32"],
    result: "i32",
  },
  av_read_frame: { parameters: ["pointer", "pointer"], result: "i32" }, // int av_read_frame(AVFormatContext *s, AVPacket *pkt)
  av_seek_frame: {
    // int av_seek_frame(AVFormatContext *s, int stream_index, int64_t timestamp, int flags)
    parameters: ["pointer", "i32", "i64", "i32"],
    result: "i32",
  },
  avformat_seek_file: {
    // int avformat_seek_file(AVFormatContext *s, int stream_index, int64_t min_ts, int64_t ts, int64_t max_ts, int flags)
    parameters: ["pointer", "i32", "i64", "i64", "i64", "i32"],
    result: "i32",
  },
  avformat_flush: { parameters: ["pointer"], result: "i32" }, // int avformat_flush(AVFormatContext *s)
  avio_alloc_context: {
    // AVIOContext *avio_alloc_context(unsigned char *buffer, int buffer_size, int write_flag, void *opaque,
    //   int (*read_packet)(void *opaque, uint8_t *buf, int buf_size),
    //   int (*write_packet)(void *opaque, uint8_t *buf, int buf_size),   (const uint8_t* from 7.0: same ABI)
    //   int64_t (*seek)(void *opaque, int64_t offset, int whence))
    parameters: ["pointer", "i32", "i32", "pointer", "function", "function", "function"],
    result: "pointer",
  },
  avio_context_free: { parameters: ["buffer"], result: "void" }, // void avio_context_free(AVIOContext **s)
  avio_open: { parameters: ["buffer", "buffer", "i32"], result: "i32" }, // int avio_open(AVIOContext **s, const char *url, int flags)
  avio_feof: { parameters: ["pointer"], result: "i32" }, // int avio_feof(AVIOContext *s)
  avio_closep: { parameters: ["buffer"], result: "i32" }, // int avio_closep(AVIOContext **s)
  avformat_alloc_output_context2: {
    // int avformat_alloc_output_context2(AVFormatContext **ctx, const AVOutputFormat *oformat,
    //                                    const char *format_name, const char *filename)
    parameters: ["buffer", "pointer", "buffer", "buffer"],
    result: "i32",
  },
  avformat_new_stream: { parameters: ["pointer", "pointer"], result: "pointer" }, // AVStream *avformat_new_stream(AVFormatContext *s, const AVCodec *c)
  avformat_write_header: { parameters: ["pointer", "buffer"], result: "i32" }, // int avformat_write_header(AVFormatContext *s, AVDictionary **options)
  av_interleaved_write_frame: { parameters: ["pointer", "pointer"], result: "i32" }, // int av_interleaved_write_frame(AVFormatContext *s, AVPacket *pkt)
  av_write_trailer: { parameters: ["pointer"], result: "i32" }, // int av_write_trailer(AVFormatContext *s)
} as const satisfies Deno.ForeignLibraryInterface;

/** libswscale. */
export const SWSCALE_SYMBOLS = {
  swscale_version: { parameters: [], result: "u32" }, // unsigned swscale_version(void)
  sws_getCachedContext: {
    // struct SwsContext *sws_getCachedContext(struct SwsContext *context, int srcW, int srcH,
    //   enum AVPixelFormat srcFormat, int dstW, int dstH, enum AVPixelFormat dstFormat, int flags,
    //   SwsFilter *srcFilter, SwsFilter *dstFilter, const double *param)
    parameters: ["pointer", "i32", "i32", "i32", "i32", "i32", "i32", "i32", "pointer", "pointer", "pointer"],
    result: "pointer",
  },
  sws_freeContext: { parameters: ["pointer"], result: "void" }, // void sws_freeContext(struct SwsContext *swsContext)
  sws_scale: {
    // int sws_scale(struct SwsContext *c, const uint8_t *const srcSlice[], const int srcStride[],
    //               int srcSliceY, int srcSliceH, uint8_t *const dst[], const int dstStride[])
    parameters: ["pointer", "pointer", "pointer", "i32", "i32", "buffer", "buffer"],
    result: "i32",
  },
  sws_setColorspaceDetails: {
    // int sws_setColorspaceDetails(struct SwsContext *c, const int inv_table[4], int srcRange,
    //   const int table[4], int dstRange, int brightness, int contrast, int saturation)
    parameters: ["pointer", "pointer", "i32", "pointer", "i32", "i32", "i32", "i32"],
    result: "i32",
  },
  sws_getCoefficients: { parameters: ["i32"], result: "pointer" }, // const int *sws_getCoefficients(int colorspace)
  sws_getColorspaceDetails: {
    // int sws_getColorspaceDetails(struct SwsContext *c, int **inv_table, int *srcRange, int **table,
    //   int *dstRange, int *brightness, int *contrast, int *saturation)
    parameters: ["pointer", "buffer", "buffer", "buffer", "buffer", "buffer", "buffer", "buffer"],
    result: "i32",
  },
} as const satisfies Deno.ForeignLibraryInterface;

/** libswresample (audio resampling, sample format conversion and channel mixing). */
export const SWRESAMPLE_SYMBOLS = {
  swresample_version: { parameters: [], result: "u32" }, // unsigned swresample_version(void)
  swr_init: { parameters: ["pointer"], result: "i32" }, // int swr_init(struct SwrContext *s)
  swr_free: { parameters: ["buffer"], result: "void" }, // void swr_free(struct SwrContext **s)
  swr_convert: {
    // int swr_convert(struct SwrContext *s, uint8_t **out, int out_count, const uint8_t **in, int in_count)
    parameters: ["pointer", "buffer", "i32", "buffer", "i32"],
    result: "i32",
  },
  swr_get_out_samples: { parameters: ["pointer", "i32"], result: "i32" }, // int swr_get_out_samples(struct SwrContext *s, int in_samples)
} as const satisfies Deno.ForeignLibraryInterface;

/** libavutil's `AVChannelLayout` API (FFmpeg >= 5.1). */
export const AVUTIL_CH_LAYOUT_SYMBOLS = {
  av_opt_get_chlayout: {
    // int av_opt_get_chlayout(void *obj, const char *name, int search_flags, AVChannelLayout *layout)
    parameters: ["pointer", "buffer", "i32", "buffer"],
    result: "i32",
  },
  av_channel_layout_default: { parameters: ["buffer", "i32"], result: "void" }, // void av_channel_layout_default(AVChannelLayout *ch_layout, int nb_channels)
  av_channel_layout_uninit: { parameters: ["buffer"], result: "void" }, // void av_channel_layout_uninit(AVChannelLayout *channel_layout)
} as const satisfies Deno.ForeignLibraryInterface;

/** libswresample's `AVChannelLayout` constructor (FFmpeg >= 5.1). */
export const SWRESAMPLE_CH_LAYOUT_SYMBOLS = {
  swr_alloc_set_opts2: {
    // int swr_alloc_set_opts2(struct SwrContext **ps,
    //   const AVChannelLayout *out_ch_layout, enum AVSampleFormat out_sample_fmt, int out_sample_rate,
    //   const AVChannelLayout *in_ch_layout, enum AVSampleFormat in_sample_fmt, int in_sample_rate,
    //   int log_offset, void *log_ctx)
    parameters: ["buffer", "buffer", "i32", "i32", "buffer", "i32", "i32", "i32", "pointer"],
    result: "i32",
  },
} as const satisfies Deno.ForeignLibraryInterface;

/** libavutil's channel mask API (FFmpeg 4.x; deprecated in 5.1, removed in 7.0). */
export const AVUTIL_MASK_SYMBOLS = {
  av_get_default_channel_layout: { parameters: ["i32"], result: "i64" }, // int64_t av_get_default_channel_layout(int nb_channels)
} as const satisfies Deno.ForeignLibraryInterface;

/** libswresample's channel mask constructor (FFmpeg 4.x; deprecated in 5.1, removed in 7.0). */
export const SWRESAMPLE_MASK_SYMBOLS = {
  swr_alloc_set_opts: {
    // struct SwrContext *swr_alloc_set_opts(struct SwrContext *s,
    //   int64_t out_ch_layout, enum AVSampleFormat out_sample_fmt, int out_sample_rate,
    //   int64_t in_ch_layout, enum AVSampleFormat in_sample_fmt, int in_sample_rate,
    //   int log_offset, void *log_ctx)
    parameters: ["pointer", "i64", "i32", "i32", "i64", "i32", "i32", "i32", "pointer"],
    result: "pointer",
  },
} as const satisfies Deno.ForeignLibraryInterface;
