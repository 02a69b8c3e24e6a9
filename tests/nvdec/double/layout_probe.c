/* Prints sizeof/offsetof of the double's own struct declarations as JSON, for tests/nvdec/layouts_test.ts. */
#include <stdio.h>
#include "nvdouble.h"
#define S(name, T) printf("%s\"%s\":{\"size\":%zu", first ? "" : ",", name, sizeof(T)); first = 0;
#define F(T, key, expr) printf(",\"%s\":%zu", key, offsetof(T, expr));
#define E printf("}");
int main(void) {
  int first = 1;
  printf("{");
  S("CUVIDPARSERPARAMS", DblParserParams)
  F(DblParserParams, "CodecType", CodecType) F(DblParserParams, "ulMaxNumDecodeSurfaces", ulMaxNumDecodeSurfaces)
  F(DblParserParams, "ulClockRate", ulClockRate) F(DblParserParams, "ulErrorThreshold", ulErrorThreshold)
  F(DblParserParams, "ulMaxDisplayDelay", ulMaxDisplayDelay) F(DblParserParams, "uReserved1", uReserved1)
  F(DblParserParams, "pUserData", pUserData) F(DblParserParams, "pfnSequenceCallback", pfnSequenceCallback)
  F(DblParserParams, "pfnDecodePicture", pfnDecodePicture) F(DblParserParams, "pfnDisplayPicture", pfnDisplayPicture)
  F(DblParserParams, "pvReserved2", pvReserved2) F(DblParserParams, "pExtVideoInfo", pExtVideoInfo) E
  S("CUVIDEOFORMAT", DblVideoFormat)
  F(DblVideoFormat, "codec", codec) F(DblVideoFormat, "frameRateNumerator", frame_rate.numerator)
  F(DblVideoFormat, "frameRateDenominator", frame_rate.denominator)
  F(DblVideoFormat, "progressive_sequence", progressive_sequence)
  F(DblVideoFormat, "bit_depth_luma_minus8", bit_depth_luma_minus8)
  F(DblVideoFormat, "bit_depth_chroma_minus8", bit_depth_chroma_minus8)
  F(DblVideoFormat, "min_num_decode_surfaces", min_num_decode_surfaces)
  F(DblVideoFormat, "coded_width", coded_width) F(DblVideoFormat, "coded_height", coded_height)
  F(DblVideoFormat, "displayLeft", display_area.left) F(DblVideoFormat, "displayTop", display_area.top)
  F(DblVideoFormat, "displayRight", display_area.right) F(DblVideoFormat, "displayBottom", display_area.bottom)
  F(DblVideoFormat, "chroma_format", chroma_format) F(DblVideoFormat, "bitrate", bitrate)
  F(DblVideoFormat, "darX", display_aspect_ratio.x) F(DblVideoFormat, "darY", display_aspect_ratio.y)
  F(DblVideoFormat, "videoSignalFlags", video_signal_description)
  F(DblVideoFormat, "color_primaries", video_signal_description.color_primaries)
  F(DblVideoFormat, "transfer_characteristics", video_signal_description.transfer_characteristics)
  F(DblVideoFormat, "matrix_coefficients", video_signal_description.matrix_coefficients)
  F(DblVideoFormat, "seqhdr_data_length", seqhdr_data_length) E
  S("CUVIDEOFORMATEX", DblVideoFormatEx)
  F(DblVideoFormatEx, "format", format) F(DblVideoFormatEx, "seqhdr_data_length", format.seqhdr_data_length)
  F(DblVideoFormatEx, "raw_seqhdr_data", seqhdr.raw_seqhdr_data) E
  S("CUVIDDECODECAPS", DblDecodeCaps)
  F(DblDecodeCaps, "eCodecType", eCodecType) F(DblDecodeCaps, "eChromaFormat", eChromaFormat)
  F(DblDecodeCaps, "nBitDepthMinus8", nBitDepthMinus8) F(DblDecodeCaps, "bIsSupported", bIsSupported)
  F(DblDecodeCaps, "nNumNVDECs", nNumNVDECs) F(DblDecodeCaps, "nOutputFormatMask", nOutputFormatMask)
  F(DblDecodeCaps, "nMaxWidth", nMaxWidth) F(DblDecodeCaps, "nMaxHeight", nMaxHeight)
  F(DblDecodeCaps, "nMaxMBCount", nMaxMBCount) F(DblDecodeCaps, "nMinWidth", nMinWidth)
  F(DblDecodeCaps, "nMinHeight", nMinHeight) E
  S("CUVIDDECODECREATEINFO", DblDecodeCreateInfo)
  F(DblDecodeCreateInfo, "ulWidth", ulWidth) F(DblDecodeCreateInfo, "ulHeight", ulHeight)
  F(DblDecodeCreateInfo, "ulNumDecodeSurfaces", ulNumDecodeSurfaces) F(DblDecodeCreateInfo, "CodecType", CodecType)
  F(DblDecodeCreateInfo, "ChromaFormat", ChromaFormat) F(DblDecodeCreateInfo, "ulCreationFlags", ulCreationFlags)
  F(DblDecodeCreateInfo, "bitDepthMinus8", bitDepthMinus8) F(DblDecodeCreateInfo, "ulIntraDecodeOnly", ulIntraDecodeOnly)
  F(DblDecodeCreateInfo, "ulMaxWidth", ulMaxWidth) F(DblDecodeCreateInfo, "ulMaxHeight", ulMaxHeight)
  F(DblDecodeCreateInfo, "Reserved1", Reserved1)
  F(DblDecodeCreateInfo, "displayLeft", display_area.left) F(DblDecodeCreateInfo, "displayTop", display_area.top)
  F(DblDecodeCreateInfo, "displayRight", display_area.right) F(DblDecodeCreateInfo, "displayBottom", display_area.bottom)
  F(DblDecodeCreateInfo, "OutputFormat", OutputFormat) F(DblDecodeCreateInfo, "DeinterlaceMode", DeinterlaceMode)
  F(DblDecodeCreateInfo, "ulTargetWidth", ulTargetWidth) F(DblDecodeCreateInfo, "ulTargetHeight", ulTargetHeight)
  F(DblDecodeCreateInfo, "ulNumOutputSurfaces", ulNumOutputSurfaces) F(DblDecodeCreateInfo, "vidLock", vidLock)
  F(DblDecodeCreateInfo, "targetLeft", target_rect.left) F(DblDecodeCreateInfo, "targetTop", target_rect.top)
  F(DblDecodeCreateInfo, "targetRight", target_rect.right) F(DblDecodeCreateInfo, "targetBottom", target_rect.bottom)
  F(DblDecodeCreateInfo, "Reserved2", Reserved2) E
  S("CUVIDRECONFIGUREDECODERINFO", DblReconfigureInfo)
  F(DblReconfigureInfo, "ulWidth", ulWidth) F(DblReconfigureInfo, "ulHeight", ulHeight)
  F(DblReconfigureInfo, "ulTargetWidth", ulTargetWidth) F(DblReconfigureInfo, "ulTargetHeight", ulTargetHeight)
  F(DblReconfigureInfo, "ulNumDecodeSurfaces", ulNumDecodeSurfaces) F(DblReconfigureInfo, "reserved1", reserved1)
  F(DblReconfigureInfo, "displayLeft", display_area.left) F(DblReconfigureInfo, "displayTop", display_area.top)
  F(DblReconfigureInfo, "displayRight", display_area.right) F(DblReconfigureInfo, "displayBottom", display_area.bottom)
  F(DblReconfigureInfo, "targetLeft", target_rect.left) F(DblReconfigureInfo, "targetTop", target_rect.top)
  F(DblReconfigureInfo, "targetRight", target_rect.right) F(DblReconfigureInfo, "targetBottom", target_rect.bottom)
  F(DblReconfigureInfo, "reserved2", reserved2) E
  S("CUVIDPICPARAMS", DblPicParams)
  F(DblPicParams, "PicWidthInMbs", PicWidthInMbs) F(DblPicParams, "FrameHeightInMbs", FrameHeightInMbs)
  F(DblPicParams, "CurrPicIdx", CurrPicIdx) F(DblPicParams, "field_pic_flag", field_pic_flag)
  F(DblPicParams, "bottom_field_flag", bottom_field_flag) F(DblPicParams, "second_field", second_field)
  F(DblPicParams, "nBitstreamDataLen", nBitstreamDataLen) F(DblPicParams, "pBitstreamData", pBitstreamData)
  F(DblPicParams, "nNumSlices", nNumSlices) F(DblPicParams, "pSliceDataOffsets", pSliceDataOffsets)
  F(DblPicParams, "ref_pic_flag", ref_pic_flag) F(DblPicParams, "intra_pic_flag", intra_pic_flag)
  F(DblPicParams, "Reserved", Reserved) F(DblPicParams, "CodecSpecific", CodecSpecific) E
  S("CUVIDPARSERDISPINFO", DblDispInfo)
  F(DblDispInfo, "picture_index", picture_index) F(DblDispInfo, "progressive_frame", progressive_frame)
  F(DblDispInfo, "top_field_first", top_field_first) F(DblDispInfo, "repeat_first_field", repeat_first_field)
  F(DblDispInfo, "timestamp", timestamp) E
  S("CUVIDPROCPARAMS", DblProcParams)
  F(DblProcParams, "progressive_frame", progressive_frame) F(DblProcParams, "second_field", second_field)
  F(DblProcParams, "top_field_first", top_field_first) F(DblProcParams, "unpaired_field", unpaired_field)
  F(DblProcParams, "reserved_flags", reserved_flags) F(DblProcParams, "reserved_zero", reserved_zero)
  F(DblProcParams, "raw_input_dptr", raw_input_dptr) F(DblProcParams, "raw_input_pitch", raw_input_pitch)
  F(DblProcParams, "raw_input_format", raw_input_format) F(DblProcParams, "raw_output_dptr", raw_output_dptr)
  F(DblProcParams, "raw_output_pitch", raw_output_pitch) F(DblProcParams, "Reserved1", Reserved1)
  F(DblProcParams, "output_stream", output_stream) F(DblProcParams, "Reserved", Reserved)
  F(DblProcParams, "Reserved2", Reserved2) E
  S("CUVIDSOURCEDATAPACKET", DblSourcePacket)
  F(DblSourcePacket, "flags", flags) F(DblSourcePacket, "payload_size", payload_size)
  F(DblSourcePacket, "payload", payload) F(DblSourcePacket, "timestamp", timestamp) E
  S("CUDA_MEMCPY2D", DblMemcpy2D)
  F(DblMemcpy2D, "srcXInBytes", srcXInBytes) F(DblMemcpy2D, "srcY", srcY) F(DblMemcpy2D, "srcMemoryType", srcMemoryType)
  F(DblMemcpy2D, "srcHost", srcHost) F(DblMemcpy2D, "srcDevice", srcDevice) F(DblMemcpy2D, "srcArray", srcArray)
  F(DblMemcpy2D, "srcPitch", srcPitch) F(DblMemcpy2D, "dstXInBytes", dstXInBytes) F(DblMemcpy2D, "dstY", dstY)
  F(DblMemcpy2D, "dstMemoryType", dstMemoryType) F(DblMemcpy2D, "dstHost", dstHost) F(DblMemcpy2D, "dstDevice", dstDevice)
  F(DblMemcpy2D, "dstArray", dstArray) F(DblMemcpy2D, "dstPitch", dstPitch) F(DblMemcpy2D, "WidthInBytes", WidthInBytes)
  F(DblMemcpy2D, "Height", Height) E
  printf("}\n");
  return 0;
}
