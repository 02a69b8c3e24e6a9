/**
 * Symbol table for NVML (`libnvidia-ml.so.1`, installed with the NVIDIA driver): the few calls that read the
 * driver's version and the decode engines' utilisation. Every argument is commented with its C type;
 * `nvmlReturn_t` is a 32-bit enum (0 = success) and `nvmlDevice_t` an opaque pointer.
 * @module
 */

/** NVML. All calls are synchronous and short. */
export const NVML_SYMBOLS = {
  nvmlInit_v2: { parameters: [], result: "i32" }, // nvmlReturn_t nvmlInit_v2(void)
  nvmlShutdown: { parameters: [], result: "i32" }, // nvmlReturn_t nvmlShutdown(void)
  nvmlErrorString: { parameters: ["i32"], result: "pointer" }, // const char *nvmlErrorString(nvmlReturn_t result)
  nvmlSystemGetDriverVersion: {
    parameters: ["buffer", "u32"], // char *version, unsigned int length
    result: "i32",
  },
  nvmlDeviceGetCount_v2: { parameters: ["buffer"], result: "i32" }, // nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
  nvmlDeviceGetHandleByIndex_v2: {
    parameters: ["u32", "buffer"], // unsigned int index, nvmlDevice_t *device
    result: "i32",
  },
  nvmlDeviceGetName: {
    parameters: ["pointer", "buffer", "u32"], // nvmlDevice_t device, char *name, unsigned int length
    result: "i32",
  },
  nvmlDeviceGetDecoderUtilization: {
    parameters: ["pointer", "buffer", "buffer"], // nvmlDevice_t device, unsigned int *utilization, unsigned int *samplingPeriodUs
    result: "i32",
  },
} as const satisfies Deno.ForeignLibraryInterface;
