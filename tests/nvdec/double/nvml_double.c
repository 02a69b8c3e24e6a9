/*
 * Test double of NVML (libnvidia-ml.so.1), the few calls sluice's GPU kit reads (scripts/gpu): the driver
 * version, one device per `nvdouble` device, its name, and decoder utilisation. Utilisation is modelled the way
 * the hardware reports it: the share of the sampling period the decode engines were busy, here the time spent
 * inside cuvidDecodePicture (every thread) over the wall time since the last query, divided by the engines.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "nvdouble.h"

enum { NVML_SUCCESS = 0, NVML_ERROR_UNINITIALIZED = 1, NVML_ERROR_INVALID_ARGUMENT = 2,
       NVML_ERROR_INSUFFICIENT_SIZE = 7 };

static int nvml_inits;
static long long busy_ns;                 /* decode time summed over threads, atomically */
static long long last_wall, last_busy;    /* the previous utilisation query, under `lock` */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

void dbl_decoder_busy(long long ns) { __atomic_add_fetch(&busy_ns, ns, __ATOMIC_SEQ_CST); }

int nvmlInit_v2(void) {
  __atomic_add_fetch(&nvml_inits, 1, __ATOMIC_SEQ_CST);
  dbl_log("nvmlInit_v2 rc=0");
  return NVML_SUCCESS;
}

int nvmlShutdown(void) {
  if (__atomic_load_n(&nvml_inits, __ATOMIC_SEQ_CST) <= 0) return NVML_ERROR_UNINITIALIZED;
  __atomic_sub_fetch(&nvml_inits, 1, __ATOMIC_SEQ_CST);
  dbl_log("nvmlShutdown rc=0");
  return NVML_SUCCESS;
}

const char *nvmlErrorString(int result) {
  switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    default: return "Unknown Error";
  }
}

#define NEED_INIT() do { if (__atomic_load_n(&nvml_inits, __ATOMIC_SEQ_CST) <= 0) return NVML_ERROR_UNINITIALIZED; } while (0)

static int copy_string(char *out, unsigned length, const char *s) {
  if (!out) return NVML_ERROR_INVALID_ARGUMENT;
  if (strlen(s) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(out, s, strlen(s) + 1);
  return NVML_SUCCESS;
}

int nvmlSystemGetDriverVersion(char *version, unsigned length) {
  NEED_INIT();
  return copy_string(version, length, "580.0-nvdouble");
}

int nvmlDeviceGetCount_v2(unsigned *count) {
  NEED_INIT();
  if (!count) return NVML_ERROR_INVALID_ARGUMENT;
  *count = (unsigned)dbl_device_count();
  return NVML_SUCCESS;
}

/* A device handle is its index + 1 (never NULL). */
int nvmlDeviceGetHandleByIndex_v2(unsigned index, void **device) {
  NEED_INIT();
  if (!device || index >= (unsigned)dbl_device_count()) return NVML_ERROR_INVALID_ARGUMENT;
  *device = (void *)(uintptr_t)(index + 1);
  return NVML_SUCCESS;
}

int nvmlDeviceGetName(void *device, char *name, unsigned length) {
  NEED_INIT();
  if (!device) return NVML_ERROR_INVALID_ARGUMENT;
  char text[64];
  snprintf(text, sizeof text, "nvdouble GPU %d", (int)((uintptr_t)device - 1));
  return copy_string(name, length, text);
}

int nvmlDeviceGetDecoderUtilization(void *device, unsigned *utilization, unsigned *sampling_period_us) {
  NEED_INIT();
  if (!device || !utilization || !sampling_period_us) return NVML_ERROR_INVALID_ARGUMENT;
  pthread_mutex_lock(&lock);
  long long wall = now_ns(), busy = __atomic_load_n(&busy_ns, __ATOMIC_SEQ_CST);
  long long dw = last_wall ? wall - last_wall : 0, db = busy - last_busy;
  last_wall = wall;
  last_busy = busy;
  pthread_mutex_unlock(&lock);
  unsigned engines = dbl_num_nvdecs ? dbl_num_nvdecs : 1;
  double share = dw > 0 ? 100.0 * (double)db / ((double)dw * engines) : 0;
  *utilization = share > 100 ? 100 : (unsigned)share;
  *sampling_period_us = (unsigned)(dw / 1000);
  return NVML_SUCCESS;
}
