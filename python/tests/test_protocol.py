"""The client's framing: frames split and joined across reads, and the limits."""
from __future__ import annotations

import pytest

from sluice import _protocol as proto
from sluice.errors import ProtocolError


def test_frames_split_and_joined_across_reads():
    msgs = [{"type": "stats", "stats": {"n": i, "s": "é" * i}} for i in range(5)]
    stream = b"".join(proto.encode(m) for m in msgs)
    for step in (1, 3, 7, len(stream)):
        r = proto.MessageReader()
        got = []
        for i in range(0, len(stream), step):
            got += r.push(stream[i:i + step])
        assert got == msgs


def test_frame_limit_and_bad_json():
    with pytest.raises(ProtocolError, match="frame of 23 bytes"):
        proto.MessageReader(max_bytes=16).push(proto.encode({"type": "x", "y": "zzzz"}))
    with pytest.raises(ProtocolError, match="not UTF-8 JSON"):
        proto.MessageReader().push(b"\x02\x00\x00\x00\xc3(")


def test_batch_checks_accept_a_good_descriptor_in_both_layouts():
    for layout, shape in (("BTHWC", [2, 4, 8, 8, 3]), ("BCTHW", [2, 3, 4, 8, 8])):
        m = {"type": "batch", "seq": 0, "epoch": 0, "index": 0, "slot": 0, "offset": 0, "nbytes": 2 * 4 * 8 * 8 * 3 * 4,
             "shape": shape, "dtype": "float32", "layout": layout, "labels": [0, 1], "clips": [{}, {}]}
        assert proto.check_message(m) is m
    with pytest.raises(ProtocolError, match="channels"):
        proto.check_message(dict(m, layout="BTHWC"))


def test_batch_audio_descriptor_is_checked():
    m = {"type": "batch", "seq": 0, "epoch": 0, "index": 0, "slot": 0, "offset": 0, "nbytes": 2 * 4 * 8 * 8 * 3,
         "shape": [2, 4, 8, 8, 3], "dtype": "uint8", "layout": "BTHWC", "labels": [0, 1], "clips": [{}, {}]}
    good = {"offset": 1536, "nbytes": 2 * 1 * 100 * 4, "shape": [2, 1, 100]}
    assert proto.check_message(dict(m, audio=good))["audio"] is good
    for bad, match in (
        (dict(good, shape=[3, 1, 100]), "shape"),  # another batch size
        (dict(good, nbytes=4), "bytes"),  # shape and size disagree
        (dict(good, offset=1000), "overlaps"),  # inside the pixels
        (dict(good, offset=1538), "misaligned"),
        ([1, 2], "object"),
    ):
        with pytest.raises(ProtocolError, match=match):
            proto.check_message(dict(m, audio=bad))
