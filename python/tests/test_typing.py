"""``sluice.Loader``'s keywords typed from the options' tables (issue 33, item 6): ``inspect.signature`` names
every keyword the server takes with its type and default, the client's own keywords are the real ``__init__``'s,
Debian's mypy on a user's script catches a misspelled keyword and a value no option takes (and passes a correct
script), ``Batch`` is a documented dataclass that a weak reference can hold, and the typed wire messages have
the keys the server's protocol declares."""
from __future__ import annotations

import dataclasses
import inspect
import json
import os
import shutil
import subprocess
import typing
import weakref

import pytest

import sluice
import sluice._loader
from sluice import _protocol
from conftest import PY, deno
from test_options import option_rows

MYPY = shutil.which("mypy")


def test_the_signature_names_every_keyword_with_its_type_and_default():
    params = inspect.signature(sluice.Loader).parameters
    keywords = {r["keyword"].split("[")[0] for r in option_rows()}  # clip["dtype"] → clip, a TypedDict
    assert keywords <= set(params), keywords - set(params)
    for name, p in params.items():
        assert p.annotation is not inspect.Parameter.empty, name
        assert p.default is not inspect.Parameter.empty, name
    for r in option_rows():
        p = params.get(r["keyword"])
        if p is not None and "default" in r["spec"] and not r["spec"].get("required"):
            assert p.default == r["spec"]["default"], (r["keyword"], p.default)
    assert "Literal['cpu', 'nvdec', 'auto']" in str(params["decode"].annotation)
    assert str(params["clip"].annotation) == "Optional[ClipKeywords]"
    # the client's own keywords, typed in the signature, are the real __init__'s
    own = sluice._loader._own_keywords()
    assert own[0] == "dataset" and list(params)[:len(own)] == own


def run_mypy(tmp_path, code: str) -> subprocess.CompletedProcess:
    script = tmp_path / "train.py"
    script.write_text(code)
    env = dict(os.environ, MYPYPATH=str(PY))
    return subprocess.run([MYPY, "--follow-imports=silent", "--no-incremental", "--cache-dir", str(tmp_path / "c"),
                           str(script)], env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(MYPY is None, reason="mypy is not installed (apt-get install mypy; scripts/setup.sh --dev)")
def test_mypy_catches_a_misspelled_keyword_and_a_value_no_option_takes(tmp_path):
    shape = 'batch_size=8, num_frames=16, width=112, height=112'
    bad = run_mypy(tmp_path, "\n".join([
        "import sluice",
        f'a = sluice.Loader("data/train", {shape}, clips_per_vidoe=2)',
        f'b = sluice.Loader("data/train", {shape}, decode="gpu")',
        f'c = sluice.Loader("data/train", {shape}, clip={{"dtpye": "float32"}})',
    ]))
    assert bad.returncode == 1, bad.stdout
    assert 'Unexpected keyword argument "clips_per_vidoe" for "Loader"; did you mean "clips_per_video"?' \
        in bad.stdout, bad.stdout
    assert 'Argument "decode" to "Loader" has incompatible type "Literal[\'gpu\']"' in bad.stdout, bad.stdout
    assert 'Argument "clip" to "Loader" has incompatible type "Dict[str, str]"; expected "Optional[ClipKeywords]"' \
        in bad.stdout, bad.stdout
    good = run_mypy(tmp_path, "\n".join([
        "import sluice",
        f'loader = sluice.Loader("data/train", {shape}, clips_per_video=2, decode="nvdec",',
        '                       clip={"dtype": "float32", "mean": [0.45, 0.45, 0.45]},',
        '                       concurrency={"decode": "auto"}, max_failures={"rate": 0.1, "after": 50})',
        "for batch in loader:",
        "    waited: float = batch.data_wait_ms + len(batch) + loader.batch_size",
    ]))
    assert good.returncode == 0, good.stdout


def test_a_batch_is_a_documented_dataclass():
    names = [f.name for f in dataclasses.fields(sluice.Batch)]
    assert names == ["video", "labels", "clips", "epoch", "index", "slot", "seq", "audio", "data_wait_ms"]
    b = sluice.Batch(video=None, labels=None, clips=[{}, {}], epoch=1, index=2, slot=0, seq=5)
    assert (len(b), b.audio, b.data_wait_ms) == (2, None, 0.0)
    assert weakref.ref(b)() is b  # a slot's batch is tracked by weak reference
    assert repr(b) == "Batch(epoch=1, index=2, video=(), labels=2)"
    source = inspect.getsource(sluice.Batch)
    for name in names:  # an attribute docstring under every field
        assert f'    {name}: ' in source and source.split(f'    {name}: ', 1)[1].split("\n", 2)[1].strip().startswith('"""')


def test_the_typed_wire_messages_have_the_keys_the_server_declares():
    doc = json.loads(deno("doc", "--json", "src/serve/protocol.ts"))
    symbols = next(iter(doc["nodes"].values()))["symbols"]
    declared = {s["name"]: {p["name"] for d in s["declarations"] if d["kind"] == "interface"
                            for p in d["def"]["properties"]} for s in symbols}
    messages = typing.get_args(_protocol.ServerMessage)
    assert len(messages) == 9
    for cls in messages:
        keys = set(cls.__required_keys__) | set(cls.__optional_keys__)
        assert keys == declared[cls.__name__], (cls.__name__, keys ^ declared[cls.__name__])
