/**
 * Symbol table for NVIDIA's management library (`libnvidia-ml.so.1`, NVML): the few calls `sluice doctor` makes
 * to say whether NVML is there and which driver it reports.
 * @module
 */

/** NVML symbols (`nvml.h`); `nvmlReturn_t` is an `int` enum, 0 = `NVML_SUCCESS`. */
export const NVML_SYMBOLS = {
  nvmlInit_v2: { parameters: [], result: "i32" }, // nvmlReturn_t nvmlInit_v2(void)
  nvmlShutdown: { parameters: [], result: "i32" }, // nvmlReturn_t nvmlShutdown(void)
  nvmlErrorString: { parameters: ["i32"], result: "pointer" }, // const char *nvmlErrorString(nvmlReturn_t result)
  nvmlSystemGetDriverVersion: { parameters: ["buffer", "u32"], result: "i32" }, // nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
  nvmlDeviceGetCount_v2: { parameters: ["buffer"], result: "i32" }, // nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
} as const satisfies Deno.ForeignLibraryInterface;
