"""Options checked once, in the user's words: the server checks ``sluice.Loader``'s keywords against the
loader's table before it starts; a misspelled keyword at any depth raises ``sluice.errors.InvalidArgumentError``
from ``sluice.Loader(...)`` naming it and the closest valid one; every option of the table is taken from Python
with no list kept in the client; python/README.md's keyword tables are the table's and the signature's, and the
Python snippets of the READMEs and docs/ parse and name only what sluice has."""
from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import json
import re
import subprocess
from typing import Any, Dict, List

import pytest

import sluice
import sluice._loader
from conftest import DENO, PY, ROOT, deno

SHAPE = dict(batch_size=2, num_frames=4, width=32, height=32)


@pytest.mark.parametrize("keywords, named, suggested", [
    ({"clips_per_vidoe": 4}, "clips_per_vidoe", "clips_per_video"),
    ({"on_clip_eror": "fail"}, "on_clip_eror", "on_clip_error"),
    ({"clip": {"num_frame": 4}}, 'clip["num_frame"]', 'clip["num_frames"]'),
    ({"concurrency": {"decod": 1}}, 'concurrency["decod"]', 'concurrency["decode"]'),
    ({"max_failures": {"rate": 0.5, "aftr": 3}}, 'max_failures["aftr"]', 'max_failures["after"]'),
    ({"pin_memroy": True}, "pin_memroy", "pin_memory"),  # one of the client's own keywords
])
def test_a_misspelled_keyword_at_any_depth_raises_invalid_argument_naming_it(tmp_path, keywords, named, suggested):
    # The dataset does not exist: the options are checked before anything else, by the server, before it listens.
    with pytest.raises(sluice.errors.InvalidArgumentError) as e:
        sluice.Loader(str(tmp_path / "no-such-dataset"), **SHAPE, **keywords)
    assert type(e.value) is sluice.errors.InvalidArgumentError and isinstance(e.value, ValueError)
    assert e.value.message == f"sluice.Loader: unknown option {named} (did you mean {suggested}?)"
    assert "stderr" not in str(e.value) and not list(tmp_path.iterdir())


def test_a_misspelled_dataset_or_socket_keyword_is_named_too(tmp_path):
    """Without a dataset or socket= the client used to raise its own ValueError ("give a dataset…"), naming neither
    the keyword the user misspelled nor the one meant."""
    for typed, meant in (("datset", "dataset"), ("sockt", "socket")):
        with pytest.raises(sluice.errors.InvalidArgumentError) as e:
            sluice.Loader(**{typed: str(tmp_path / "x")}, **SHAPE)
        assert e.value.message == f"sluice.Loader: unknown option {typed} (did you mean {meant}?)"
    with pytest.raises(sluice.errors.InvalidArgumentError, match="dataset is required"):
        sluice.Loader(**SHAPE)
    with pytest.raises(ValueError, match="give a dataset"):
        sluice.Loader()


def test_values_out_of_range_and_contradictions_are_named_as_written(tmp_path):
    cases = [
        (dict(SHAPE, batch_size=0), "batch_size must be an integer from 1 to 65536, got 0"),
        (dict(SHAPE, clip={"dtype": "f32"}), 'clip["dtype"] must be one of uint8, float32, got "f32"'),
        (dict(SHAPE, frame_rate=5, clip={"sampling": "uniform"}),
         'frame_rate applies to clip["sampling"] "rate" only (sampling is "uniform")'),
        (dict(SHAPE, shuffle="no"), 'shuffle must be True or False, got "no"'),
        (dict(SHAPE, slots=0), "slots must be an integer from 1 to 1024, got 0"),
        (dict(SHAPE, num_frames=4, clip={"num_frames": 4}),
         'num_frames and clip["num_frames"] set the same option: give one of them'),
        (dict(batch_size=2), "num_frames, width and height are required"),
        (dict(SHAPE, audio={"sample_rate": 16000}, clip={"sampling": "uniform"}),
         "audio needs clips of one duration: set clip_duration (uniform sampling takes whole videos)"),
    ]
    for keywords, message in cases:
        with pytest.raises(sluice.errors.InvalidArgumentError) as e:
            sluice.Loader(str(tmp_path), **keywords)
        assert e.value.message == f"sluice.Loader: {message}"


def test_keyword_types_are_checked_at_the_door_in_the_callers_words(tmp_path):
    """Issue 30 item 6: ``timeout="5"`` was accepted and failed at the first batch inside ``_session.py``;
    ``batch_size=8.0`` passed (JSON writes 8.0 and 8 alike); ``width=np.int64(64)`` failed with "int64 is not
    JSON serializable", naming no keyword. The dataset does not exist: every error here comes first."""
    import numpy as np

    cases = [
        (dict(SHAPE, timeout="5"), "timeout must be a number of seconds > 0 (or None), got '5' (str)"),
        (dict(SHAPE, timeout=0), "timeout must be a number of seconds > 0 (or None), got 0 (int)"),
        (dict(SHAPE, copy="yes"), "copy must be True or False, got 'yes' (str)"),
        (dict(SHAPE, pin_memory=1), "pin_memory must be True or False, got 1 (int)"),
        (dict(SHAPE, device=1.0), "device must be an integer >= 0 (or None), got 1.0 (float)"),
        (dict(SHAPE, batch_size=8.0), "batch_size must be an integer from 1 to 65536, got 8.0 (a float)"),
        (dict(SHAPE, width=np.float64(64)), "width must be an integer from 1 to 16384, got 64.0 (a float)"),
        (dict(SHAPE, slots=4.0), "slots must be an integer from 1 to 1024, got 4.0 (a float)"),
        (dict(SHAPE, concurrency={"decode": 2.0}),
         'concurrency["decode"] must be an integer from 1 to 256 or "auto", got 2.0 (a float)'),
        (dict(SHAPE, max_failures={"rate": 0.5, "after": 3.0}),
         'max_failures["after"] must be an integer >= 0, got 3.0 (a float)'),
        (dict(SHAPE, max_failures=2.0),
         "max_failures must be an integer >= 0, or a dict of rate, after, got 2.0 (a float)"),
        (dict(SHAPE, height=float("nan")),
         "height must be a finite number (leave it out, or None, for the default), got nan (float)"),
        (dict(SHAPE, seed=object()), "seed must be a number, string, boolean, list or dict, got"),
    ]
    for keywords, message in cases:
        with pytest.raises(sluice.errors.InvalidArgumentError) as e:
            sluice.Loader(str(tmp_path / "none"), **keywords)
        assert e.value.message.startswith(f"sluice.Loader: {message}"), (keywords, e.value.message)
    # Numbers where numbers go pass the door (the missing dataset is the first thing wrong), numpy's too.
    for keywords in (dict(SHAPE, frame_rate=12.5), dict(SHAPE, clip_duration=np.float32(1.5)),
                     dict(SHAPE, clip={"mean": np.array([0.4, 0.5, 0.6]), "dtype": "float32"}),
                     dict(SHAPE, timeout=np.float64(5), shuffle=np.bool_(False), seed=np.uint8(3))):
        with pytest.raises(sluice.errors.DatasetError):
            sluice.Loader(str(tmp_path / "none"), **keywords)
    with pytest.raises(sluice.errors.InvalidArgumentError, match=r"^sluice.Loader: batch_size must be an integer >= 1"):
        sluice.Loader(socket=str(tmp_path / "sock"), batch_size=8.0)


def test_numpy_integers_are_integers(dataset):
    import numpy as np

    with sluice.Loader(dataset, batch_size=np.int64(2), num_frames=np.int32(4), width=np.int64(32),
                       height=np.uint16(24), seed=np.int64(7), clips_per_video=np.int8(1), timeout=np.int64(60)) as l:
        b = next(iter(l))
        assert tuple(b.video.shape) == (2, 4, 24, 32, 3) and l.batch_size == 2


def option_rows() -> List[Dict[str, Any]]:
    """Every keyword the server takes, from the server itself (``main.ts --options``)."""
    return json.loads(deno("run", "-A", "src/serve/main.ts", "--options"))


def sample(spec: Dict[str, Any]) -> Any:
    """A valid value of an option, other than its default where there is a choice, made from its declaration."""
    kind = spec["kind"]
    if kind == "integer":
        v = spec.get("min", 0)
        return v + 1 if v == spec.get("default") and v + 1 <= spec.get("max", v + 1) else v
    if kind == "number":
        low = spec["above"] + 0.5 if "above" in spec else spec.get("min", 0)
        v = min(low, spec.get("below", low + 1) - 0.01, spec.get("max", low))
        return v if v != spec.get("default") else (v + spec.get("max", v + 1)) / 2
    if kind == "boolean":
        return not spec.get("default", False)
    if kind == "enum":
        values = spec["values"]
        return values[1] if values[0] == spec.get("default") else values[0]
    if kind == "numbers":
        x = spec["above"] + 0.25 if "above" in spec else spec.get("min", 0.25)
        return [x] * spec["length"]
    if kind == "either":
        return sample(spec["of"][0])
    if kind == "string" and spec.get("python") == "metrics":
        return "127.0.0.1:9400"
    raise AssertionError(f"no sample for {spec}")


def as_keywords(keyword: str, value: Any) -> Dict[str, Any]:
    """``clip["dtype"]`` → ``{"clip": {"dtype": value}}``; ``num_frames`` → ``{"num_frames": value}``."""
    m = re.fullmatch(r'(\w+)\["(\w+)"\]', keyword)
    return {m[1]: {m[2]: value}} if m else {keyword: value}


def test_every_option_of_the_table_is_taken_from_python_with_no_list_in_the_client(tmp_path, monkeypatch):
    rows = [r for r in option_rows() if r["keyword"] not in ("dataset", *SHAPE)]
    assert len(rows) >= 50
    sent: List[Dict[str, Any]] = []

    class Captured(Exception):
        pass

    def capture(config, **_):
        sent.append(config)
        raise Captured

    monkeypatch.setattr(sluice._loader, "ServerProcess", capture)
    monkeypatch.setattr(sluice._loader._node, "connect", lambda config, hello, **_: capture(dict(config, node=True)))
    wanted = []
    for row in rows:
        value = sample(row["spec"])
        keywords = as_keywords(row["keyword"], value)
        if row["path"] in ("clip.mean", "clip.std"):
            keywords["clip"]["dtype"] = "float32"  # normalisation applies to float samples
        if row["path"] == "sampler.rank":
            keywords["world_size"] = value + 1
        if row["path"] == "audio.channels":
            keywords["audio"]["sample_rate"] = 16000  # a channel count goes with the rate it is resampled to
        if row["keyword"].startswith("max_failures["):
            keywords["max_failures"] = {"rate": 0.5, "after": 3, **keywords["max_failures"]}
        if row["keyword"] == "cpu_budget":
            keywords["node"] = True  # a node server's budget
        with pytest.raises(Captured):
            sluice.Loader(str(tmp_path), **SHAPE, **keywords)
        wanted.append((row, value))
    # Every config the client would start a server with, through the server's own reading of it.
    out = subprocess.run([DENO, "run", "-A", "tests/serve/fixtures/resolve_configs.ts"], cwd=ROOT, check=True,
                         input=json.dumps([dict(c, socket="/tmp/unused.sock") for c in sent]), capture_output=True,
                         text=True).stdout
    results = [json.loads(line) for line in out.splitlines()]
    assert len(results) == len(wanted)
    for (row, value), got in zip(wanted, results):
        assert "error" not in got, (row["keyword"], value, got)
        at: Any = got[row["path"]] if row["scope"] == "server" else got["loader"]
        if row["path"] == "metrics":
            at = f"{at['hostname']}:{at['port']}"
        if row["scope"] == "loader":
            for k in row["path"].split("."):
                at = at[k]
        assert at == value, (row["keyword"], row["path"], value, at)


def test_readme_tables_are_the_tables():
    r = subprocess.run([DENO, "run", "-A", "scripts/python_options_table.ts", "--check"], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    readme = (ROOT / "python" / "README.md").read_text()
    client = readme[readme.index("<!-- client-keywords"):readme.index("<!-- client-keywords end -->")]
    rows = dict(re.findall(r"^\|\s*`(\w+)`\s*\|\s*`([^`]+)`\s*\|", client, re.M))
    params = inspect.signature(sluice.Loader.__init__, follow_wrapped=False).parameters
    own = {n: repr(params[n].default) for n in sluice._loader._own_keywords()}
    assert rows == own


def python_snippets():
    """The ```python blocks users copy (README.md, docs/*.md, python/README.md), each with where it starts."""
    for md in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), PY / "README.md"]:
        text = md.read_text()
        for m in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M):
            yield f"{md.relative_to(ROOT)}:{text[:m.start()].count(chr(10)) + 1}", m[1]


def test_every_python_snippet_parses_and_names_only_what_sluice_has():
    keywords = {r["keyword"] for r in option_rows()}
    keywords |= {k.split("[")[0] for k in keywords}  # groups: clip={...}
    keywords |= set(inspect.signature(sluice.Loader.__init__).parameters) - {"self", "options"}
    snippets = list(python_snippets())
    assert len(snippets) >= 7, snippets
    for where, code in snippets:
        for node in ast.walk(ast.parse(code, where)):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "sluice":
                module = importlib.import_module(node.module)
                assert all(hasattr(module, a.name) for a in node.names), f"{where}: from {node.module} import …"
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "sluice":
                assert hasattr(sluice, node.attr) or importlib.util.find_spec(f"sluice.{node.attr}"), \
                    f"{where}: sluice.{node.attr}"
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "Loader":
                for k in node.keywords:
                    given = [k.arg] if not isinstance(k.value, ast.Dict) else [
                        f'{k.arg}["{key.value}"]' for key in k.value.keys if isinstance(key, ast.Constant)]
                    assert k.arg is None or set(given) <= keywords, f"{where}: sluice.Loader({', '.join(given)}=…)"


def test_options_a_running_server_would_ignore_are_refused_with_socket(tmp_path):
    with pytest.raises(ValueError, match=r"^num_frames, shuffle: a running server's own options apply"):
        sluice.Loader(socket=str(tmp_path / "s.sock"), batch_size=2, num_frames=4, shuffle=False)
    with pytest.raises(ValueError, match="rank and world_size go together"):
        sluice.Loader(socket=str(tmp_path / "s.sock"), rank=1)
