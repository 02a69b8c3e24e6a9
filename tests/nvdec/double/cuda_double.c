/*
 * Test double of the CUDA driver API (the subset sluice calls), exported under the real versioned names.
 * "Device memory" lives at non-canonical addresses (0xDEAD...) that fault if the host ever dereferences them;
 * a table maps them to host allocations and every copy is bounds-checked. Per-thread state (contexts are
 * per-thread in CUDA too; Deno runs test modules on separate threads). Fault injection: "name:N[=code],..."
 * (the Nth call of `name` fails) from NVDOUBLE_FAIL or nvdouble_configure(); call log to NVDOUBLE_LOG.
 * CUDA IPC: an exported allocation moves into a memfd, and its handle names (pid, fd, size); another process
 * opens /proc/<pid>/fd/<fd> and maps the same pages under a device address of its own.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "nvdouble.h"

#define MAX_ALLOCS 4096
#define MAX_FAULTS 16
#define MAX_STACK 64
#define DEV_BASE 0xDEAD000000000000ULL

/* host: calloc'd, or mmap'd from a memfd (shm_fd = fd + 1, exported) or from another process (imported). */
typedef struct { CUdeviceptr base; size_t size; unsigned char *host; int shm_fd; int imported; } Alloc;
typedef struct { char name[64]; int nth; int code; int seen; } Fault;

static __thread Alloc allocs[MAX_ALLOCS];
static __thread CUdeviceptr next_base = DEV_BASE;
static __thread Fault faults[MAX_FAULTS];
static __thread int nfaults;
static __thread FILE *logf_;
static __thread int initialized, configured;
static __thread int device_count = 1;
static __thread int driver_version = 12040;
static __thread int retains[8];
static __thread CUcontext stack[MAX_STACK];
static __thread int depth;
static __thread uintptr_t next_handle = 0x5000;
static __thread uintptr_t streams[256];
__thread unsigned dbl_max_width = 4096, dbl_max_height = 4096, dbl_num_nvdecs = 3;

/* ------------------------------------------------------------------ control */

static void parse_faults(const char *spec) {
  nfaults = 0;
  if (!spec) return;
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", spec);
  for (char *tok = strtok(buf, ","); tok && nfaults < MAX_FAULTS; tok = strtok(NULL, ",")) {
    Fault *f = &faults[nfaults];
    memset(f, 0, sizeof *f);
    char *colon = strchr(tok, ':');
    if (!colon) continue;
    *colon = 0;
    snprintf(f->name, sizeof f->name, "%s", tok);
    f->nth = atoi(colon + 1);
    char *eq = strchr(colon + 1, '=');
    f->code = eq ? atoi(eq + 1) : (strstr(f->name, "Alloc") ? DBL_OUT_OF_MEMORY : DBL_UNKNOWN);
    nfaults++;
  }
}

static void release_host(Alloc *a) {
  if (a->shm_fd || a->imported) {
    if (a->host) munmap(a->host, a->size ? a->size : 1);
    if (a->shm_fd) close(a->shm_fd - 1);
  } else {
    free(a->host);
  }
  memset(a, 0, sizeof *a);
}

static void reset_all(void) {
  for (int i = 0; i < MAX_ALLOCS; i++) release_host(&allocs[i]);
  next_base = DEV_BASE;
  memset(retains, 0, sizeof retains);
  memset(streams, 0, sizeof streams);
  depth = 0; /* cuInit state survives: a process initialises the driver once */
  dbl_nvcuvid_reset();
}

static void configure_from_env(void) {
  if (configured) return;
  configured = 1;
  parse_faults(getenv("NVDOUBLE_FAIL"));
  const char *log = getenv("NVDOUBLE_LOG");
  if (log && *log) logf_ = fopen(log, "a");
  if (getenv("NVDOUBLE_DEVICES")) device_count = atoi(getenv("NVDOUBLE_DEVICES"));
}

/** Test control: resets all state of this thread, sets faults, log file (truncated), device count, caps. */
int nvdouble_configure(const char *fail_spec, const char *log_path, int devices, unsigned max_width,
                       unsigned max_height, unsigned num_nvdecs) {
  configured = 1;
  reset_all();
  parse_faults(fail_spec && *fail_spec ? fail_spec : NULL);
  if (logf_) fclose(logf_);
  logf_ = log_path && *log_path ? fopen(log_path, "w") : NULL;
  device_count = devices;
  dbl_max_width = max_width;
  dbl_max_height = max_height;
  dbl_num_nvdecs = num_nvdecs;
  return 0;
}

/** Test control: number of live device allocations (mapped frames included). */
int nvdouble_live_allocations(void) {
  int n = 0;
  for (int i = 0; i < MAX_ALLOCS; i++) n += allocs[i].host != NULL;
  return n;
}

void dbl_log(const char *fmt, ...) {
  configure_from_env();
  if (!logf_) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(logf_, fmt, ap);
  va_end(ap);
  fputc('\n', logf_);
  fflush(logf_);
}

int dbl_fault(const char *name) {
  configure_from_env();
  for (int i = 0; i < nfaults; i++) {
    if (strcmp(faults[i].name, name) != 0) continue;
    if (++faults[i].seen == faults[i].nth) {
      dbl_log("%s INJECTED rc=%d", name, faults[i].code);
      return faults[i].code;
    }
  }
  return 0;
}

int dbl_has_context(void) { return depth > 0 && stack[depth - 1] != NULL; }

#define FAULT(name) do { int _c = dbl_fault(name); if (_c) return _c; } while (0)
#define NEED_CTX(name) do { if (!initialized) { dbl_log("%s rc=3 not-initialized", name); return DBL_NOT_INITIALIZED; } \
  if (!dbl_has_context()) { dbl_log("%s rc=201 no-current-context", name); return DBL_INVALID_CONTEXT; } } while (0)

/* ------------------------------------------------------------------ device memory */

static CUresult add_alloc(unsigned char *host, size_t size, int imported, CUdeviceptr *out) {
  for (int i = 0; i < MAX_ALLOCS; i++) {
    if (allocs[i].host) continue;
    allocs[i].host = host;
    allocs[i].imported = imported;
    allocs[i].size = size;
    allocs[i].base = next_base;
    next_base += ((size + 0xFFFFF) & ~(CUdeviceptr)0xFFFFF) + 0x100000; /* 1 MiB guard gap */
    *out = allocs[i].base;
    return DBL_SUCCESS;
  }
  return DBL_OUT_OF_MEMORY;
}

CUresult dbl_dev_alloc(size_t size, CUdeviceptr *out) {
  unsigned char *host = calloc(1, size ? size : 1);
  if (!host) return DBL_OUT_OF_MEMORY;
  CUresult rc = add_alloc(host, size, 0, out);
  if (rc) free(host);
  return rc;
}

CUresult dbl_dev_free(CUdeviceptr p) {
  for (int i = 0; i < MAX_ALLOCS; i++) {
    if (allocs[i].host && !allocs[i].imported && allocs[i].base == p) {
      release_host(&allocs[i]);
      return DBL_SUCCESS;
    }
  }
  return DBL_INVALID_VALUE;
}

unsigned char *dbl_dev_resolve(CUdeviceptr p, size_t len) {
  for (int i = 0; i < MAX_ALLOCS; i++) {
    Alloc *a = &allocs[i];
    if (!a->host || p < a->base || p >= a->base + a->size) continue;
    if (p + len > a->base + a->size) return NULL;
    return a->host + (p - a->base);
  }
  return NULL;
}

int dbl_stream_valid(CUstream s) {
  if (s == NULL) return 1;
  for (int i = 0; i < 256; i++) if (streams[i] == (uintptr_t)s) return 1;
  return 0;
}

/* ------------------------------------------------------------------ init, devices, contexts */

CUresult cuInit(unsigned int flags) {
  FAULT("cuInit");
  if (flags != 0) return DBL_INVALID_VALUE;
  if (device_count <= 0) { dbl_log("cuInit rc=100"); return DBL_NO_DEVICE; }
  initialized = 1;
  dbl_log("cuInit rc=0");
  return DBL_SUCCESS;
}

CUresult cuDriverGetVersion(int *v) {
  if (!v) return DBL_INVALID_VALUE;
  *v = driver_version;
  return DBL_SUCCESS;
}

CUresult cuDeviceGetCount(int *n) {
  if (!initialized) return DBL_NOT_INITIALIZED;
  *n = device_count;
  return DBL_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal) {
  if (!initialized) return DBL_NOT_INITIALIZED;
  if (ordinal < 0 || ordinal >= device_count) { dbl_log("cuDeviceGet rc=101 ordinal=%d", ordinal); return DBL_INVALID_DEVICE; }
  *d = ordinal;
  return DBL_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
  if (!initialized) return DBL_NOT_INITIALIZED;
  if (d < 0 || d >= device_count) return DBL_INVALID_DEVICE;
  snprintf(name, len, "NVDEC test double %d (libavcodec)", d);
  return DBL_SUCCESS;
}

static CUcontext primary_of(CUdevice d) { return (CUcontext)(uintptr_t)(0xC0C0000000ULL + (unsigned)d * 0x1000); }
static int device_of(CUcontext c) { return (int)(((uintptr_t)c - 0xC0C0000000ULL) / 0x1000); }

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice d) {
  FAULT("cuDevicePrimaryCtxRetain");
  if (!initialized) return DBL_NOT_INITIALIZED;
  if (d < 0 || d >= device_count) return DBL_INVALID_DEVICE;
  retains[d]++;
  *pctx = primary_of(d);
  dbl_log("cuDevicePrimaryCtxRetain rc=0 h=dev%d", d);
  return DBL_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
  if (d < 0 || d >= device_count || retains[d] == 0) { dbl_log("cuDevicePrimaryCtxRelease_v2 rc=1 h=dev%d unbalanced", d); return DBL_INVALID_VALUE; }
  retains[d]--;
  dbl_log("cuDevicePrimaryCtxRelease_v2 rc=0 h=dev%d", d);
  return DBL_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx) {
  if (!initialized) return DBL_NOT_INITIALIZED;
  *pctx = depth ? stack[depth - 1] : NULL;
  return DBL_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *d) {
  if (!dbl_has_context()) return DBL_INVALID_CONTEXT;
  *d = device_of(stack[depth - 1]);
  return DBL_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext c) {
  FAULT("cuCtxPushCurrent_v2");
  if (!initialized) return DBL_NOT_INITIALIZED;
  int d = device_of(c);
  if (c == NULL || d < 0 || d >= device_count || retains[d] == 0 || depth == MAX_STACK) {
    dbl_log("cuCtxPushCurrent_v2 rc=201 bad-context");
    return DBL_INVALID_CONTEXT;
  }
  stack[depth++] = c;
  dbl_log("cuCtxPushCurrent_v2 rc=0 h=ctx");
  return DBL_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext *pctx) {
  if (depth == 0) { dbl_log("cuCtxPopCurrent_v2 rc=201 empty-stack"); return DBL_INVALID_CONTEXT; }
  CUcontext c = stack[--depth];
  if (pctx) *pctx = c;
  dbl_log("cuCtxPopCurrent_v2 rc=0 h=ctx");
  return DBL_SUCCESS;
}

/* Context synchronizations, counted over all threads (a client synchronizes before giving a slot back). */
static int ctx_syncs;

CUresult cuCtxSynchronize(void) {
  FAULT("cuCtxSynchronize");
  NEED_CTX("cuCtxSynchronize");
  __atomic_add_fetch(&ctx_syncs, 1, __ATOMIC_SEQ_CST);
  dbl_log("cuCtxSynchronize rc=0");
  return DBL_SUCCESS;
}

/** Test control: cuCtxSynchronize calls so far, in every thread. */
int nvdouble_ctx_synchronizations(void) {
  return __atomic_load_n(&ctx_syncs, __ATOMIC_SEQ_CST);
}

/* ------------------------------------------------------------------ streams */

CUresult cuStreamCreate(CUstream *s, unsigned int flags) {
  FAULT("cuStreamCreate");
  NEED_CTX("cuStreamCreate");
  (void)flags;
  for (int i = 0; i < 256; i++) {
    if (streams[i]) continue;
    streams[i] = next_handle += 0x10;
    *s = (CUstream)streams[i];
    dbl_log("cuStreamCreate rc=0 h=0x%lx", (unsigned long)streams[i]);
    return DBL_SUCCESS;
  }
  return DBL_OUT_OF_MEMORY;
}

CUresult cuStreamDestroy_v2(CUstream s) {
  NEED_CTX("cuStreamDestroy_v2");
  for (int i = 0; i < 256; i++) {
    if (streams[i] && streams[i] == (uintptr_t)s) {
      streams[i] = 0;
      dbl_log("cuStreamDestroy_v2 rc=0 h=0x%lx", (unsigned long)(uintptr_t)s);
      return DBL_SUCCESS;
    }
  }
  return DBL_INVALID_HANDLE;
}

CUresult cuStreamSynchronize(CUstream s) {
  FAULT("cuStreamSynchronize");
  NEED_CTX("cuStreamSynchronize");
  return dbl_stream_valid(s) ? DBL_SUCCESS : DBL_INVALID_HANDLE;
}

/* ------------------------------------------------------------------ memory */

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size) {
  FAULT("cuMemAlloc_v2");
  NEED_CTX("cuMemAlloc_v2");
  if (!p || size == 0) return DBL_INVALID_VALUE;
  CUresult rc = dbl_dev_alloc(size, p);
  dbl_log("cuMemAlloc_v2 rc=%d h=0x%llx size=%zu", rc, rc ? 0ULL : *p, size);
  return rc;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
  NEED_CTX("cuMemFree_v2");
  CUresult rc = dbl_dev_free(p);
  dbl_log("cuMemFree_v2 rc=%d h=0x%llx", rc, p);
  return rc;
}

CUresult cuMemAllocHost_v2(void **pp, size_t size) {
  FAULT("cuMemAllocHost_v2");
  NEED_CTX("cuMemAllocHost_v2");
  *pp = calloc(1, size ? size : 1);
  if (!*pp) return DBL_OUT_OF_MEMORY;
  dbl_log("cuMemAllocHost_v2 rc=0 h=%p size=%zu", *pp, size);
  return DBL_SUCCESS;
}

CUresult cuMemFreeHost(void *p) {
  NEED_CTX("cuMemFreeHost");
  dbl_log("cuMemFreeHost rc=0 h=%p", p);
  free(p);
  return DBL_SUCCESS;
}

static CUresult copy2d(const DblMemcpy2D *c, const char *name) {
  if (c->srcMemoryType != 1 && c->srcMemoryType != 2) return DBL_INVALID_VALUE;
  if (c->dstMemoryType != 1 && c->dstMemoryType != 2) return DBL_INVALID_VALUE;
  if (c->srcArray || c->dstArray) return DBL_INVALID_VALUE;
  if (c->Height == 0 || c->WidthInBytes == 0) return DBL_SUCCESS;
  if (c->WidthInBytes > c->srcPitch || c->WidthInBytes > c->dstPitch) {
    dbl_log("%s rc=1 width-exceeds-pitch", name);
    return DBL_INVALID_VALUE;
  }
  size_t span_src = (c->srcY + c->Height - 1) * c->srcPitch + c->srcXInBytes + c->WidthInBytes;
  size_t span_dst = (c->dstY + c->Height - 1) * c->dstPitch + c->dstXInBytes + c->WidthInBytes;
  const unsigned char *src = c->srcMemoryType == 1 ? (const unsigned char *)c->srcHost : dbl_dev_resolve(c->srcDevice, span_src);
  unsigned char *dst = c->dstMemoryType == 1 ? (unsigned char *)c->dstHost : dbl_dev_resolve(c->dstDevice, span_dst);
  if (!src || !dst) {
    dbl_log("%s rc=1 out-of-bounds src=0x%llx dst=0x%llx", name, c->srcDevice, c->dstDevice);
    return DBL_INVALID_VALUE;
  }
  for (size_t y = 0; y < c->Height; y++) {
    memcpy(dst + (c->dstY + y) * c->dstPitch + c->dstXInBytes, src + (c->srcY + y) * c->srcPitch + c->srcXInBytes,
           c->WidthInBytes);
  }
  return DBL_SUCCESS;
}

CUresult cuMemcpy2D_v2(const DblMemcpy2D *c) {
  FAULT("cuMemcpy2D_v2");
  NEED_CTX("cuMemcpy2D_v2");
  return copy2d(c, "cuMemcpy2D_v2");
}

CUresult cuMemcpy2DAsync_v2(const DblMemcpy2D *c, CUstream s) {
  FAULT("cuMemcpy2DAsync_v2");
  NEED_CTX("cuMemcpy2DAsync_v2");
  if (!dbl_stream_valid(s)) return DBL_INVALID_HANDLE;
  return copy2d(c, "cuMemcpy2DAsync_v2");
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
  FAULT("cuMemcpyHtoD_v2");
  NEED_CTX("cuMemcpyHtoD_v2");
  unsigned char *d = dbl_dev_resolve(dst, n);
  if (!d || !src) { dbl_log("cuMemcpyHtoD_v2 rc=1 out-of-bounds"); return DBL_INVALID_VALUE; }
  memcpy(d, src, n);
  return DBL_SUCCESS;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
  if (!dbl_stream_valid(s)) return DBL_INVALID_HANDLE;
  return cuMemcpyHtoD_v2(dst, src, n);
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
  FAULT("cuMemcpyDtoH_v2");
  NEED_CTX("cuMemcpyDtoH_v2");
  unsigned char *s = dbl_dev_resolve(src, n);
  if (!s || !dst) { dbl_log("cuMemcpyDtoH_v2 rc=1 out-of-bounds"); return DBL_INVALID_VALUE; }
  memcpy(dst, s, n);
  return DBL_SUCCESS;
}

/* ------------------------------------------------------------------ IPC */

static const char IPC_MAGIC[8] = {'N', 'V', 'D', 'B', 'L', 'I', 'P', 'C'};

CUresult cuIpcGetMemHandle(DblIpcHandle *h, CUdeviceptr p) {
  FAULT("cuIpcGetMemHandle");
  NEED_CTX("cuIpcGetMemHandle");
  Alloc *a = NULL;
  for (int i = 0; i < MAX_ALLOCS; i++)
    if (allocs[i].host && !allocs[i].imported && allocs[i].base == p) a = &allocs[i];
  if (!h || !a) { dbl_log("cuIpcGetMemHandle rc=1 not-an-allocation-base h=0x%llx", p); return DBL_INVALID_VALUE; }
  if (!a->shm_fd) { /* move the allocation into a memfd another process can map */
    size_t n = a->size ? a->size : 1;
    int fd = memfd_create("nvdouble-ipc", MFD_CLOEXEC);
    if (fd < 0) return DBL_OUT_OF_MEMORY;
    unsigned char *m = ftruncate(fd, (off_t)n) == 0 ? mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (m == MAP_FAILED) { close(fd); return DBL_OUT_OF_MEMORY; }
    memcpy(m, a->host, n);
    free(a->host);
    a->host = m;
    a->shm_fd = fd + 1;
  }
  memset(h, 0, sizeof *h);
  memcpy(h->reserved, IPC_MAGIC, 8);
  int pid = getpid(), fd = a->shm_fd - 1;
  unsigned long long size = a->size;
  memcpy(h->reserved + 8, &pid, 4);
  memcpy(h->reserved + 12, &fd, 4);
  memcpy(h->reserved + 16, &size, 8);
  dbl_log("cuIpcGetMemHandle rc=0 h=0x%llx size=%llu", p, size);
  return DBL_SUCCESS;
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *p, DblIpcHandle h, unsigned int flags) {
  FAULT("cuIpcOpenMemHandle_v2");
  NEED_CTX("cuIpcOpenMemHandle_v2");
  int pid, fd;
  unsigned long long size;
  memcpy(&pid, h.reserved + 8, 4);
  memcpy(&fd, h.reserved + 12, 4);
  memcpy(&size, h.reserved + 16, 8);
  if (!p || memcmp(h.reserved, IPC_MAGIC, 8) != 0 || size == 0 || flags > 1) {
    dbl_log("cuIpcOpenMemHandle_v2 rc=1 bad-handle");
    return DBL_INVALID_VALUE;
  }
  if (pid == getpid()) { dbl_log("cuIpcOpenMemHandle_v2 rc=201 same-process"); return DBL_INVALID_CONTEXT; }
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/fd/%d", pid, fd);
  int local = open(path, O_RDWR | O_CLOEXEC);
  struct stat st;
  if (local < 0 || fstat(local, &st) != 0 || (unsigned long long)st.st_size < size) {
    if (local >= 0) close(local);
    dbl_log("cuIpcOpenMemHandle_v2 rc=205 exporter-gone pid=%d", pid);
    return DBL_MAP_FAILED;
  }
  unsigned char *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, local, 0);
  close(local); /* the mapping keeps the pages */
  if (m == MAP_FAILED) return DBL_MAP_FAILED;
  CUresult rc = add_alloc(m, size, 1, p);
  if (rc) { munmap(m, size); return rc; }
  dbl_log("cuIpcOpenMemHandle_v2 rc=0 h=0x%llx size=%llu", *p, size);
  return DBL_SUCCESS;
}

CUresult cuIpcCloseMemHandle(CUdeviceptr p) {
  NEED_CTX("cuIpcCloseMemHandle");
  for (int i = 0; i < MAX_ALLOCS; i++) {
    if (allocs[i].host && allocs[i].imported && allocs[i].base == p) {
      release_host(&allocs[i]);
      dbl_log("cuIpcCloseMemHandle rc=0 h=0x%llx", p);
      return DBL_SUCCESS;
    }
  }
  dbl_log("cuIpcCloseMemHandle rc=1 not-open h=0x%llx", p);
  return DBL_INVALID_VALUE;
}

/* ------------------------------------------------------------------ modules and kernels */

#define MAX_PARAMS 16
typedef struct { char name[64]; int nparams; int sizes[MAX_PARAMS]; } Kernel;
static __thread Kernel kernels[8];
static __thread int nkernels;
static __thread uintptr_t modules[16];

/* Reads the entry's parameter list from the PTX text: ".entry NAME(\n .param .u64 NAME_param_0, ...)". */
static int parse_entry(const char *ptx, const char *name, Kernel *k) {
  char needle[96];
  snprintf(needle, sizeof needle, ".entry %s(", name);
  const char *p = strstr(ptx, needle);
  if (!p) return 0;
  p += strlen(needle);
  const char *end = strchr(p, ')');
  if (!end) return 0;
  snprintf(k->name, sizeof k->name, "%s", name);
  k->nparams = 0;
  for (const char *q = p; q < end && k->nparams < MAX_PARAMS; q++) {
    if (strncmp(q, ".param .", 8) != 0) continue;
    const char *t = q + 8;
    int bits = atoi(t + 1);
    k->sizes[k->nparams++] = bits / 8;
  }
  return 1;
}

CUresult cuModuleLoadData(CUmodule *m, const void *image) {
  FAULT("cuModuleLoadData");
  NEED_CTX("cuModuleLoadData");
  const char *ptx = image;
  if (!strstr(ptx, ".version 6.0") || !strstr(ptx, ".target sm_52") || !strstr(ptx, ".address_size 64")) {
    dbl_log("cuModuleLoadData rc=218 unexpected-ptx-header");
    return DBL_INVALID_PTX;
  }
  nkernels = 0;
  if (parse_entry(ptx, "nv12_to_rgb_planar", &kernels[nkernels])) nkernels++;
  if (nkernels == 0) { dbl_log("cuModuleLoadData rc=218 no-known-entry"); return DBL_INVALID_PTX; }
  for (int i = 0; i < 16; i++) {
    if (modules[i]) continue;
    modules[i] = next_handle += 0x10;
    *m = (CUmodule)modules[i];
    dbl_log("cuModuleLoadData rc=0 h=0x%lx", (unsigned long)modules[i]);
    return DBL_SUCCESS;
  }
  return DBL_OUT_OF_MEMORY;
}

CUresult cuModuleUnload(CUmodule m) {
  for (int i = 0; i < 16; i++) {
    if (modules[i] && modules[i] == (uintptr_t)m) {
      modules[i] = 0;
      dbl_log("cuModuleUnload rc=0 h=0x%lx", (unsigned long)(uintptr_t)m);
      return DBL_SUCCESS;
    }
  }
  return DBL_INVALID_HANDLE;
}

CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
  NEED_CTX("cuModuleGetFunction");
  (void)m;
  for (int i = 0; i < nkernels; i++) {
    if (strcmp(kernels[i].name, name) == 0) { *f = &kernels[i]; return DBL_SUCCESS; }
  }
  return DBL_NOT_FOUND;
}

/* C reference of src/nvdec/kernels/nv12_to_rgb.cu: same arithmetic, same order. */
static unsigned char clamp255(float v) { v += 0.5f; return v < 0.f ? 0 : v > 255.f ? 255 : (unsigned char)v; }

static void nv12_to_rgb_ref(const unsigned char *luma, const unsigned char *chroma, unsigned srcPitch, unsigned char *dst,
                            unsigned dstPitch, unsigned long long planeStride, unsigned width, unsigned height,
                            int matrix, int flags, unsigned xs, unsigned ys) {
  float kr = matrix == 1 ? 0.2126f : 0.299f, kb = matrix == 1 ? 0.0722f : 0.114f, kg = 1.f - kr - kb;
  int full = flags & 1, bgr = (flags >> 1) & 1;
  for (unsigned y = 0; y < height && y < ys; y++) {
    for (unsigned x = 0; x < width && x < xs; x++) {
      float Y = luma[(size_t)y * srcPitch + x];
      float U = chroma[(size_t)(y / 2) * srcPitch + (x & ~1u)] - 128.f;
      float V = chroma[(size_t)(y / 2) * srcPitch + (x & ~1u) + 1] - 128.f;
      if (!full) { Y = (Y - 16.f) * (255.f / 219.f); U = U * (255.f / 224.f); V = V * (255.f / 224.f); }
      float r = Y + 2.f * (1.f - kr) * V;
      float b = Y + 2.f * (1.f - kb) * U;
      float g = Y - (2.f * kb * (1.f - kb) / kg) * U - (2.f * kr * (1.f - kr) / kg) * V;
      size_t o = (size_t)y * dstPitch + x;
      dst[o + (bgr ? 2 : 0) * planeStride] = clamp255(r);
      dst[o + planeStride] = clamp255(g);
      dst[o + (bgr ? 0 : 2) * planeStride] = clamp255(b);
    }
  }
}

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, CUstream s, void **params, void **extra) {
  FAULT("cuLaunchKernel");
  NEED_CTX("cuLaunchKernel");
  Kernel *k = f;
  if (!dbl_stream_valid(s) || !params || extra || gz != 1 || bz != 1 || shared != 0 || bx * by > 1024) {
    dbl_log("cuLaunchKernel rc=1 bad-launch");
    return DBL_INVALID_VALUE;
  }
  unsigned long long v[MAX_PARAMS];
  for (int i = 0; i < k->nparams; i++) {
    v[i] = 0;
    memcpy(&v[i], params[i], k->sizes[i]);
  }
  if (strcmp(k->name, "nv12_to_rgb_planar") != 0 || k->nparams != 10) return DBL_INVALID_VALUE;
  unsigned srcPitch = v[2], dstPitch = v[4], w = v[6], h = v[7];
  unsigned long long planeStride = v[5];
  const unsigned char *luma = dbl_dev_resolve(v[0], (size_t)(h - 1) * srcPitch + w);
  const unsigned char *chroma = dbl_dev_resolve(v[1], (size_t)((h + 1) / 2 - 1) * srcPitch + ((w + 1) & ~1u));
  unsigned char *dst = dbl_dev_resolve(v[3], 2 * planeStride + (size_t)(h - 1) * dstPitch + w);
  if (!luma || !chroma || !dst || w == 0 || h == 0 || dstPitch < w || planeStride < (size_t)dstPitch * h) {
    dbl_log("cuLaunchKernel rc=719 out-of-bounds w=%u h=%u", w, h);
    return 719; /* CUDA_ERROR_LAUNCH_FAILED */
  }
  nv12_to_rgb_ref(luma, chroma, srcPitch, dst, dstPitch, planeStride, w, h, (int)v[8], (int)v[9], gx * bx, gy * by);
  dbl_log("cuLaunchKernel rc=0 kernel=%s grid=%ux%u block=%ux%u w=%u h=%u matrix=%d flags=%d", k->name, gx, gy, bx, by,
          w, h, (int)v[8], (int)v[9]);
  return DBL_SUCCESS;
}

/* ------------------------------------------------------------------ errors */

static const struct { int code; const char *name, *text; } errors[] = {
  {0, "CUDA_SUCCESS", "no error"},
  {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
  {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
  {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
  {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
  {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
  {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
  {205, "CUDA_ERROR_MAP_FAILED", "mapping of buffer object failed"},
  {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
  {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
  {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
  {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
  {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
  {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

CUresult cuGetErrorName(CUresult e, const char **s) {
  for (size_t i = 0; i < sizeof errors / sizeof *errors; i++) if (errors[i].code == e) { *s = errors[i].name; return 0; }
  *s = NULL;
  return DBL_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult e, const char **s) {
  for (size_t i = 0; i < sizeof errors / sizeof *errors; i++) if (errors[i].code == e) { *s = errors[i].text; return 0; }
  *s = NULL;
  return DBL_INVALID_VALUE;
}
