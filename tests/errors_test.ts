import assert from "node:assert/strict";
import { errorText, LibraryNotFoundError, MediaError } from "../src/errors.ts";

Deno.test("errorText: one line, the error's class, the subject named once", () => {
  const e = new MediaError("/data/a.mp4", "demux window", "no keyframe found at or before 0.4 s in stream 0");
  assert.equal(
    errorText(e),
    "MediaError: /data/a.mp4: demux window failed: no keyframe found at or before 0.4 s in stream 0",
  );
  // The caller prints the file in front: the message's copy is left out.
  assert.equal(
    errorText(e, "/data/a.mp4"),
    "MediaError: demux window failed: no keyframe found at or before 0.4 s in stream 0",
  );
  assert.equal(errorText(e, "/data/b.mp4"), errorText(e), "another subject leaves the message alone");
  assert.equal(errorText(e, "/data"), errorText(e), "only a whole leading subject is left out");
  const multi = new LibraryNotFoundError(
    "FFmpeg: not found in /x.\nTried:\n  /x/a.so\n  /x/b.so\nInstall them",
    [],
  );
  assert.equal(
    errorText(multi),
    "LibraryNotFoundError: FFmpeg: not found in /x.; Tried:; /x/a.so; /x/b.so; Install them",
  );
  assert.equal(errorText("/f.mp4: plain string", "/f.mp4"), "plain string");
  assert.equal(errorText(42), "42");
});
