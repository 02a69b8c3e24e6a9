/*
 * Test double of the CUDA driver API (the subset sluice calls), exported under the real versioned names.
 * "Device memory" lives at non-canonical addresses (0xDEAD...) that fault if the host ever dereferences them;
 * a table maps them to host allocations and every copy is bounds-checked. As in CUDA, a device's primary context
 * is one per process: its retain count and its memory are shared by all threads (a device address made on one
 * thread is valid on any thread that makes the context current), while the current-context stack is per thread.
 * Each allocation remembers the thread that made it, so a test (Deno runs test modules on separate threads)
 * resets and counts only its own. Bytes copied are counted per direction (host→device, device→host,
 * device→device), process-wide; at exit (or unload) the double logs "exit violations=N" with the primary-context
 * retains and device allocations still held. Fault injection: "name:N[=code],..."
 * (the Nth call of `name` fails) from NVDOUBLE_FAIL or nvdouble_configure(); call log to NVDOUBLE_LOG.
 * CUDA IPC: an exported allocation moves into a memfd, and its handle names (pid, fd, size); another process
 * opens /proc/<pid>/fd/<fd> and maps the same pages under a device address of its own.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
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
typedef struct { CUdeviceptr base; size_t size; unsigned char *host; int shm_fd; int imported; int owner; } Alloc;
typedef struct { char name[64]; int nth; int code; int seen; } Fault;

static Alloc allocs[MAX_ALLOCS]; /* process-wide, under `mem_lock` */
static CUdeviceptr next_base = DEV_BASE;
static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static int next_thread_id = 1;
static __thread int thread_id; /* this thread's tag on the allocations it makes */
/* Bytes copied: [0] host→device, [1] device→host, [2] device→device (process-wide). */
static unsigned long long copied[3];
static __thread Fault faults[MAX_FAULTS];
static __thread int nfaults;
static __thread FILE *logf_;
static __thread int initialized, configured;
static __thread int device_count = 1;
static __thread int driver_version = 12040;
static int retains[8]; /* the primary contexts: one per device, per process (atomic) */
static __thread CUcontext stack[MAX_STACK];
static __thread int depth;
static __thread uintptr_t next_handle = 0x5000;
static __thread uintptr_t streams[256];
__thread unsigned dbl_max_width = 4096, dbl_max_height = 4096, dbl_num_nvdecs = 3;

static int my_id(void) {
  if (!thread_id) thread_id = __atomic_fetch_add(&next_thread_id, 1, __ATOMIC_SEQ_CST);
  return thread_id;
}

static void count_copy(int direction, size_t n) { __atomic_add_fetch(&copied[direction], n, __ATOMIC_SEQ_CST); }

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
  pthread_mutex_lock(&mem_lock);
  for (int i = 0; i < MAX_ALLOCS; i++) if (allocs[i].host && allocs[i].owner == my_id()) release_host(&allocs[i]);
  pthread_mutex_unlock(&mem_lock);
  for (int i = 0; i < 3; i++) __atomic_store_n(&copied[i], 0, __ATOMIC_SEQ_CST);
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

/** Test control: number of live device allocations this thread made (mapped frames included). */
int nvdouble_live_allocations(void) {
  int n = 0;
  pthread_mutex_lock(&mem_lock);
  for (int i = 0; i < MAX_ALLOCS; i++) n += allocs[i].host != NULL && allocs[i].owner == my_id();
  pthread_mutex_unlock(&mem_lock);
  return n;
}

/** Test control: bytes copied since the last configure, `direction` 0 host→device, 1 device→host, 2 device→device. */
unsigned long long nvdouble_copied_bytes(int direction) {
  return direction >= 0 && direction < 3 ? __atomic_load_n(&copied[direction], __ATOMIC_SEQ_CST) : 0;
}

/** Test control: primary-context retains held now, over all devices and threads. */
int nvdouble_primary_retains(void) {
  int n = 0;
  for (int d = 0; d < 8; d++) n += __atomic_load_n(&retains[d], __ATOMIC_SEQ_CST);
  return n;
}

/* At exit (or unload): what is still held. A process that released everything logs violations=0. */
__attribute__((destructor)) static void report_at_exit(void) {
  const char *path = getenv("NVDOUBLE_LOG");
  if (!path || !*path) return;
  int live = 0;
  for (int i = 0; i < MAX_ALLOCS; i++) live += allocs[i].host != NULL && !allocs[i].imported;
  int held = nvdouble_primary_retains();
  FILE *f = fopen(path, "a");
  if (!f) return;
  fprintf(f, "exit violations=%d primary-retains=%d device-allocations=%d htod=%llu dtoh=%llu dtod=%llu\n", held + live,
          held, live, copied[0], copied[1], copied[2]);
  fclose(f);
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

int dbl_device_count(void) {
  configure_from_env();
  return device_count;
}

int dbl_has_context(void) { return depth > 0 && stack[depth - 1] != NULL; }

#define FAULT(name) do { int _c = dbl_fault(name); if (_c) return _c; } while (0)
#define NEED_CTX(name) do { if (!initialized) { dbl_log("%s rc=3 not-initialized", name); return DBL_NOT_INITIALIZED; } \
  if (!dbl_has_context()) { dbl_log("%s rc=201 no-current-context", name); return DBL_INVALID_CONTEXT; } } while (0)

/* ------------------------------------------------------------------ device memory */

static CUresult add_alloc(unsigned char *host, size_t size, int imported, CUdeviceptr *out) {
  int owner = my_id();
  pthread_mutex_lock(&mem_lock);
  for (int i = 0; i < MAX_ALLOCS; i++) {
    if (allocs[i].host) continue;
    allocs[i].host = host;
    allocs[i].imported = imported;
    allocs[i].size = size;
    allocs[i].owner = owner;
    allocs[i].base = next_base;
    next_base += ((size + 0xFFFFF) & ~(CUdeviceptr)0xFFFFF) + 0x100000; /* 1 MiB guard gap */
    *out = allocs[i].base;
    pthread_mutex_unlock(&mem_lock);
    return DBL_SUCCESS;
  }
  pthread_mutex_unlock(&mem_lock);
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
  pthread_mutex_lock(&mem_lock);
  for (int i = 0; i < MAX_ALLOCS; i++) {
    if (allocs[i].host && !allocs[i].imported && allocs[i].base == p) {
      release_host(&allocs[i]);
      pthread_mutex_unlock(&mem_lock);
      return DBL_SUCCESS;
    }
  }
  pthread_mutex_unlock(&mem_lock);
  return DBL_INVALID_VALUE;
}

unsigned char *dbl_dev_resolve(CUdeviceptr p, size_t len) {
  unsigned char *out = NULL;
  pthread_mutex_lock(&mem_lock);
  for (int i = 0; i < MAX_ALLOCS; i++) {
    Alloc *a = &allocs[i];
    if (!a->host || p < a->base || p >= a->base + a->size) continue;
    if (p + len <= a->base + a->size) out = a->host + (p - a->base);
    break;
  }
  pthread_mutex_unlock(&mem_lock);
  return out;
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
  __atomic_add_fetch(&retains[d], 1, __ATOMIC_SEQ_CST);
  *pctx = primary_of(d);
  dbl_log("cuDevicePrimaryCtxRetain rc=0 h=dev%d", d);
  return DBL_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
  int held = d < 0 || d >= 8 ? 0 : __atomic_load_n(&retains[d], __ATOMIC_SEQ_CST);
  while (held > 0 && !__atomic_compare_exchange_n(&retains[d], &held, held - 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}
  if (d < 0 || d >= device_count || held == 0) { dbl_log("cuDevicePrimaryCtxRelease_v2 rc=1 h=dev%d unbalanced", d); return DBL_INVALID_VALUE; }
  dbl_log("cuDevicePrimaryCtxRelease_v2 rc=0 h=dev%d", d);
  return DBL_SUCCESS;
}

/* The primary contexts' flags (cuDevicePrimaryCtxSetFlags_v2), settable while no retain is held, as the driver's. */
static unsigned primary_flags[8];

CUresult cuDevicePrimaryCtxGetState(CUdevice d, unsigned int *flags, int *active) {
  if (!initialized) return DBL_NOT_INITIALIZED;
  if (d < 0 || d >= device_count || !flags || !active) return DBL_INVALID_VALUE;
  *flags = __atomic_load_n(&primary_flags[d], __ATOMIC_SEQ_CST);
  *active = __atomic_load_n(&retains[d], __ATOMIC_SEQ_CST) > 0;
  return DBL_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice d, unsigned int flags) {
  if (!initialized) return DBL_NOT_INITIALIZED;
  if (d < 0 || d >= device_count || (flags & ~0x1fu)) return DBL_INVALID_VALUE;
  __atomic_store_n(&primary_flags[d], flags, __ATOMIC_SEQ_CST);
  dbl_log("cuDevicePrimaryCtxSetFlags_v2 rc=0 h=dev%d flags=%u", d, flags);
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
  if (c == NULL || d < 0 || d >= device_count || __atomic_load_n(&retains[d], __ATOMIC_SEQ_CST) == 0 || depth == MAX_STACK) {
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
  int h2d = c->srcMemoryType == 1, d2h = c->dstMemoryType == 1;
  if (h2d != d2h || !h2d) count_copy(h2d ? 0 : d2h ? 1 : 2, c->WidthInBytes * c->Height);
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
  count_copy(0, n);
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
  count_copy(1, n);
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

#define MAX_PARAMS 32
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
  if (parse_entry(ptx, "rgb_planar_to_clip", &kernels[nkernels])) nkernels++;
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

/* C reference of rgb_planar_to_clip (src/nvdec/kernels/nv12_to_rgb.cu): one frame, every output pixel. */
static void rgb_planar_to_clip_ref(const unsigned char *src, unsigned srcPitch, unsigned long long srcPlane,
                                   unsigned char *dst, unsigned w, unsigned h, const unsigned long long *st,
                                   const int *map, int flags, const float *scale, const float *offset) {
  for (unsigned y = 0; y < h; y++) {
    for (unsigned x = 0; x < w; x++) {
      int sx = map[0] + (int)x * map[2] + (int)y * map[3], sy = map[1] + (int)x * map[4] + (int)y * map[5];
      const unsigned char *s = src + (size_t)sy * srcPitch + sx;
      unsigned long long o = y * st[1] + x * st[0];
      for (int c = 0; c < 3; c++) {
        unsigned char v = s[c * srcPlane];
        if (flags & 1) {
          float f = v * scale[c] + offset[c];
          memcpy(dst + 4 * (o + c * st[2]), &f, 4);
        } else dst[o + c * st[2]] = v;
      }
    }
  }
}

/* Bounds-checks and runs rgb_planar_to_clip for `frames` frames (grid z). */
static CUresult launch_clip(Kernel *k, void **params, unsigned gx, unsigned gy, unsigned frames, unsigned bx, unsigned by) {
  unsigned long long v[MAX_PARAMS];
  float fl[6];
  int map[6];
  for (int i = 0; i < k->nparams; i++) { v[i] = 0; memcpy(&v[i], params[i], k->sizes[i]); }
  for (int i = 0; i < 6; i++) { memcpy(&map[i], params[11 + i], 4); memcpy(&fl[i], params[18 + i], 4); }
  unsigned srcPitch = v[1], w = v[5], h = v[6];
  unsigned long long srcPlane = v[2], srcFrame = v[3], st[4] = { v[7], v[8], v[9], v[10] };
  int flags = (int)v[17], esize = flags & 1 ? 4 : 1;
  if (w == 0 || h == 0 || frames == 0 || gx * bx < w || gy * by < h) { dbl_log("cuLaunchKernel rc=1 bad-grid"); return DBL_INVALID_VALUE; }
  /* The source pixels read: the map's corners, inside the source frame. */
  long long srcW = srcPitch, lastX = 0, lastY = 0;
  for (int cy = 0; cy < 2; cy++) for (int cx = 0; cx < 2; cx++) {
    long long sx = map[0] + (long long)cx * (w - 1) * map[2] + (long long)cy * (h - 1) * map[3];
    long long sy = map[1] + (long long)cx * (w - 1) * map[4] + (long long)cy * (h - 1) * map[5];
    if (sx < 0 || sy < 0 || sx >= srcW) { dbl_log("cuLaunchKernel rc=719 map-outside-source"); return 719; }
    if (sx > lastX) lastX = sx;
    if (sy > lastY) lastY = sy;
  }
  unsigned long long last = (w - 1) * st[0] + (h - 1) * st[1] + 2 * st[2];
  for (unsigned t = 0; t < frames; t++) {
    const unsigned char *src = dbl_dev_resolve(v[0] + t * srcFrame, 2 * srcPlane + (size_t)lastY * srcPitch + lastX + 1);
    unsigned char *dst = dbl_dev_resolve(v[4] + esize * t * st[3], esize * (last + 1));
    if (!src || !dst) { dbl_log("cuLaunchKernel rc=719 out-of-bounds frame=%u", t); return 719; }
    rgb_planar_to_clip_ref(src, srcPitch, srcPlane, dst, w, h, st, map, flags, fl, fl + 3);
  }
  dbl_log("cuLaunchKernel rc=0 kernel=%s grid=%ux%ux%u w=%u h=%u flags=%d", k->name, gx, gy, frames, w, h, flags);
  return DBL_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, CUstream s, void **params, void **extra) {
  FAULT("cuLaunchKernel");
  NEED_CTX("cuLaunchKernel");
  Kernel *k = f;
  int clip = strcmp(k->name, "rgb_planar_to_clip") == 0;
  if (!dbl_stream_valid(s) || !params || extra || (gz != 1 && !clip) || gz > 65535 || bz != 1 || shared != 0 || bx * by > 1024) {
    dbl_log("cuLaunchKernel rc=1 bad-launch");
    return DBL_INVALID_VALUE;
  }
  if (clip) return k->nparams == 24 ? launch_clip(k, params, gx, gy, gz, bx, by) : DBL_INVALID_VALUE;
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
