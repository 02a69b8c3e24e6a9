"""The keywords of ``sluice.Loader``, typed and documented: made by scripts/python_options_table.ts from the
options' tables and python/README.md's client keywords (do not edit; ``deno task python-options`` writes it
again, with the same ``__init__`` for type checkers in _loader.py, where a misspelled keyword is an error).
``inspect.signature(sluice.Loader)`` shows :func:`typed_init`; at run time the server checks every keyword
once, and names a wrong one as it was written."""
from __future__ import annotations

import os
from typing import Literal, Optional, Sequence, TypedDict, Union


class ClipKeywords(TypedDict, total=False):
    """The keys of ``clip=``."""

    num_frames: int
    """frames per clip (default: required)"""

    width: int
    """clip frame width (default: required)"""

    height: int
    """clip frame height (default: required)"""

    frame_rate: float
    """resample clips to this many frames per second (sampling rate) (default: each video's own rate)"""

    sampling: Literal["consecutive", "rate", "uniform", "stride"]
    """how a clip's frames are chosen in its window (default: rate with a frame rate, stride with a stride, else consecutive)"""

    stride: int
    """take every stride-th frame (sampling stride)"""

    resize: Literal["stretch", "short-side", "random-crop", "random-resized-crop"]
    """how a frame becomes width × height"""

    scale: Sequence[float]
    """random-resized-crop: fraction of the frame's area"""

    ratio: Sequence[float]
    """random-resized-crop: aspect ratio range"""

    flip_probability: float
    """probability of mirroring a clip"""

    interpolation: Literal["bilinear", "bicubic", "area"]
    """resize filter"""

    dtype: Literal["uint8", "float32"]
    """sample type: bytes, or floats (x / 255 - mean) / std"""

    mean: Sequence[float]
    """float32: per-channel (R, G, B) mean"""

    std: Sequence[float]
    """float32: per-channel standard deviation"""

    rotate: bool
    """apply the video's display rotation"""

    max_pad_fraction: float
    """a clip whose padding would exceed this fraction of its frames fails"""


class AudioKeywords(TypedDict, total=False):
    """The keys of ``audio=``."""

    sample_rate: int
    """audio: samples per second of each clip's audio (batch.audio) (default: required with audio)"""

    channels: int
    """audio: channels (1 mixes down to mono)"""


class ConcurrencyKeywords(TypedDict, total=False):
    """The keys of ``concurrency=``."""

    fetch: Union[int, Literal["auto"]]
    """fetch tasks at once, or auto: the pipeline's controller sets it while the loader runs"""

    demux: Union[int, Literal["auto"]]
    """demux tasks at once, or auto: the pipeline's controller sets it while the loader runs"""

    decode: Union[int, Literal["auto"]]
    """decode tasks at once, or auto: the pipeline's controller sets it while the loader runs (default: the number of cores (NVDEC: its engines))"""


class AutoConcurrencyKeywords(TypedDict, total=False):
    """The keys of ``auto_concurrency=``."""

    interval_ms: float
    """how often the controller reads the counters, ms"""

    threshold: float
    """a step is kept only if throughput rises by more than this fraction"""

    cpu_budget: float
    """tasks the CPU-bound stages may run at once, summed over them (default: twice the number of cores)"""

    reprobe_ms: float
    """a settled stage is probed again after this, ms"""

    drift: float
    """a settled stage is probed again when its throughput moves by more than this fraction"""

    min_tasks: float
    """tasks a window needs before it is judged"""


class FetchKeywords(TypedDict, total=False):
    """The keys of ``fetch=``."""

    retries: int
    """retries after the first attempt for retryable failures (5xx, timeouts, dropped connections)"""

    backoff_ms: float
    """backoff before the first retry, doubled for each next, ms"""

    connect_timeout_ms: float
    """time until the response headers arrive, ms"""

    idle_timeout_ms: float
    """longest wait for the next bytes of the body, ms"""

    timeout_ms: float
    """time limit of one attempt, ms"""

    deadline_ms: float
    """time limit of the whole fetch, every attempt and backoff, ms"""


class MaxFailuresKeywords(TypedDict, total=False):
    """The keys of ``max_failures=`` as a dict."""

    rate: float
    """failed fraction of the tasks finished (default: required)"""

    after: int
    """judged once this many tasks finished (default: required)"""


class DecodeLessKeywords(TypedDict, total=False):
    """The keys of ``decode_less=``."""

    skip: bool
    """leave undecoded the non-reference frames no slot shows"""

    once: bool
    """one decode pass for clips of a video whose packets overlap"""

    once_memory: int
    """bytes clips decoded ahead of their turn may hold"""

    threads: bool
    """idle cores as FFmpeg threads when few clips are left"""


def typed_init(
    self,
    dataset: Optional[Union[str, os.PathLike[str]]] = None,
    *,
    socket: Optional[str] = None,
    copy: bool = False,
    pin_memory: bool = False,
    device: Optional[int] = None,
    timeout: Optional[float] = None,
    node: bool = False,
    batch_size: Optional[int] = None,
    num_frames: Optional[int] = None,
    width: Optional[int] = None,
    height: Optional[int] = None,
    frame_rate: Optional[float] = None,
    seed: int = 0,
    shuffle: bool = True,
    group_by_video: bool = True,
    clips_per_video: int = 1,
    clip_duration: Optional[float] = None,
    placement: Literal["random", "uniform"] = "random",
    keyframe_aligned: bool = False,
    rank: Optional[int] = None,
    world_size: Optional[int] = None,
    remainder: Literal["pad", "drop"] = "pad",
    shuffle_buffer: Optional[int] = None,
    layout: Literal["BTHWC", "BCTHW"] = "BTHWC",
    decode: Literal["cpu", "nvdec", "auto"] = "cpu",
    backend: Literal["inprocess", "subprocess"] = "inprocess",
    buffer_size: int = 3,
    ordered: bool = True,
    drop_last: bool = False,
    on_clip_error: Literal["replace", "skip", "fail"] = "replace",
    max_failures: Union[int, MaxFailuresKeywords] = {"rate": 0.5, "after": 20},
    slots: int = 4,
    cpu_budget: Optional[int] = None,
    metrics: Optional[str] = None,
    clip: Optional[ClipKeywords] = None,
    audio: Optional[AudioKeywords] = None,
    concurrency: Optional[ConcurrencyKeywords] = None,
    auto_concurrency: Optional[AutoConcurrencyKeywords] = None,
    fetch: Optional[FetchKeywords] = None,
    decode_less: Optional[DecodeLessKeywords] = None,
) -> None:
    """Starts a server for ``dataset`` (or connects to ``socket``) and loads batches; see ``sluice.Loader``.

    Keywords:

    - dataset: where the server's loader reads (the first argument)
    - socket: connect to a running server at this path instead of starting one
    - copy: receive batches copied out of the slot (released at once)
    - pin_memory: with `copy`: copy into pinned memory
    - device: CUDA device the server's NVDEC loader decodes on and keeps its GPU slots on (default `LOCAL_RANK` with `decode="nvdec"`/`"auto"`)
    - timeout: seconds to wait for any one batch (default: no limit)
    - node: share this machine's node server with the other local ranks (started by the first, gone with the last): see One server per node
    - batch_size: clips per batch (default: required with a dataset)
    - num_frames: frames per clip (default: required with a dataset)
    - width: clip frame width (default: required with a dataset)
    - height: clip frame height (default: required with a dataset)
    - frame_rate: resample clips to this many frames per second (sampling rate) (default: each video's own rate)
    - seed: seed of the epochs' order, windows and random transforms
    - shuffle: shuffle the clips' order each epoch
    - group_by_video: keep a video's clips next to each other in an epoch (one open of the file for all)
    - clips_per_video: clips taken from each video per epoch
    - clip_duration: seconds of video each clip is taken from (default: the time the clip's frames take (the whole video for uniform sampling))
    - placement: where clips are placed in a video: at random, or spread evenly
    - keyframe_aligned: start clips at keyframes (cheaper seeks)
    - rank: this process's rank (default: $RANK, else 0)
    - world_size: number of ranks (default: $WORLD_SIZE, else 1)
    - remainder: make ranks' epochs equal by repeating a few clips (pad) or leaving a few out (drop)
    - shuffle_buffer: clips the loader's shuffle buffer holds to interleave videos (0: off) (default: max(64, 8 × clips per video) with shuffle, group by video and 2+ clips per video, else 0)
    - layout: batch layout: [B,T,H,W,3] or planar [B,3,T,H,W]
    - decode: decoder
    - backend: where sample, fetch and demux run: this process or a Deno child
    - buffer_size: batches buffered for the consumer
    - ordered: keep the sampler's order (same seed, same batches)
    - drop_last: drop a last short batch of an epoch
    - on_clip_error: a clip that cannot be loaded: replaced by another, skipped, or the epoch fails
    - max_failures: failed clips an epoch tolerates (replaced ones count): a count, or a rate once `after` clips finished
    - slots: batch slots per client: the batches a trainer may keep at once (not how far decoding runs ahead)
    - cpu_budget: node server: decode Workers all ranks share (default: the cores less one per local rank ($LOCAL_WORLD_SIZE), at least 1)
    - metrics: serve Prometheus metrics over HTTP at HOST:PORT (GET /metrics)
    - clip: see ClipKeywords
    - audio: see AudioKeywords
    - concurrency: see ConcurrencyKeywords
    - auto_concurrency: see AutoConcurrencyKeywords
    - fetch: see FetchKeywords
    - decode_less: see DecodeLessKeywords
    """
