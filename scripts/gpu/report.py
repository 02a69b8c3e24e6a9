#!/usr/bin/env python3
"""The GPU kit's report: ``gpu-report.json`` and ``gpu-report.md`` in one folder, rewritten after every phase so a
run cut short keeps every phase before the cut (docs/gpu.md, "The report", describes every field).

    report.py init DIR --kit KIT --budget SECONDS          start a report (the machine's facts, the kit's)
    report.py phase DIR NAME --result FILE --exit RC --seconds S --limit L [--log FILE]
                                                             add one phase from its JSON-lines result file
    report.py finish DIR                                     mark the run finished

Only the standard library: it runs wherever python3 does (the GPU machine, CI).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any, Dict, List

FORMAT = "sluice-gpu-report/1"
TIMEOUT_CODES = (124, 137)


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def load(folder: Path) -> Dict[str, Any]:
    return json.loads((folder / "gpu-report.json").read_text())


def save(folder: Path, report: Dict[str, Any]) -> None:
    report["updated"] = now()
    report["totals"] = totals(report)
    for name, text in (("gpu-report.json", json.dumps(report, indent=2, default=str)), ("gpu-report.md", render(report))):
        tmp = folder / f".{name}.tmp"
        tmp.write_text(text + "\n")
        os.replace(tmp, folder / name)


def totals(report: Dict[str, Any]) -> Dict[str, Any]:
    checks = {"pass": 0, "fail": 0, "skip": 0}
    phases: Dict[str, int] = {}
    for p in report["phases"]:
        phases[p["status"]] = phases.get(p["status"], 0) + 1
        for c in p["checks"]:
            checks[c["status"]] = checks.get(c["status"], 0) + 1
    return {"checks": checks, "phases": phases}


def read_lines(path: str) -> List[Dict[str, Any]]:
    out = []
    try:
        text = Path(path).read_text()
    except OSError:
        return out
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            out.append({"check": "(unreadable result line)", "status": "fail", "reason": line[:200]})
    return out


def phase_entry(name: str, lines: List[Dict[str, Any]], code: int, seconds: float, limit: float,
                log_tail: str) -> Dict[str, Any]:
    checks = [{k: v for k, v in x.items() if k != "check"} | {"name": x["check"]} for x in lines if "check" in x]
    info: Dict[str, Any] = {}
    for x in lines:
        info.update(x.get("info", {}))
    tables: Dict[str, Any] = {}  # by title: a phase rewrites a table as it grows, the last one counts
    for x in lines:
        if "table" in x:
            tables[x["table"]["title"]] = x["table"]
    ended = {x["check"] for x in lines if "check" in x}
    running = [x["running"] for x in lines if "running" in x and x["running"] not in ended]
    entry: Dict[str, Any] = {"name": name, "seconds": round(seconds, 1), "limitSeconds": limit, "exit": code,
                             "checks": checks, "info": info, "tables": list(tables.values())}
    statuses = {c["status"] for c in checks}
    if code in TIMEOUT_CODES:
        entry["status"] = "timeout"
        entry["reason"] = f"stopped at its {limit:g} s limit" + (f" during '{running[-1]}'" if running else "")
    elif code != 0:
        entry["status"] = "crash"
        entry["reason"] = f"exit {code}" + (f" during '{running[-1]}'" if running else "") + \
            (f": {log_tail}" if log_tail else "")
    elif "fail" in statuses:
        entry["status"] = "fail"
    elif "pass" in statuses:
        entry["status"] = "pass"
    elif statuses == {"skip"}:
        entry["status"] = "skip"
        entry["reason"] = checks[0].get("reason", "")
    else:
        entry["status"] = "fail"
        entry["reason"] = "the phase recorded no check"
    return entry


def cell(v: Any) -> str:
    if isinstance(v, float):
        v = round(v, 3)
    text = v if isinstance(v, str) else json.dumps(v, default=str)
    return text.replace("|", "\\|").replace("\n", " ")


def figures_text(f: Dict[str, Any]) -> str:
    return "; ".join(f"{k}={cell(v)}" for k, v in f.items())


def gpu_summary(r: Dict[str, Any]) -> str:
    """The device and driver as the inventory found them, and whether they were the ABI double."""
    env = r.get("driverOverrides", {})
    double = any("nvdouble" in (v or "") for v in env.values())
    found = {}
    for p in r["phases"]:
        if p["name"] == "inventory":
            for c in p["checks"]:
                if c["name"] in ("cuda driver", "nvml") and c["status"] == "pass":
                    found.update({k: v for k, v in (c.get("figures") or {}).items() if k in ("devices", "driver",
                                                                                         "driverApi")})
    text = cell(found) if found else "(inventory not run or no driver)"
    overrides = {k: v for k, v in env.items() if v}
    return ("**the ABI-level driver double (tests/nvdec/double), not a GPU**; " if double else "") + text + \
        (f"; overrides {cell(overrides)}" if overrides else "")


def render(r: Dict[str, Any]) -> str:
    t = r["totals"]
    kit = r.get("kit", {})
    lines = [
        "# sluice GPU report",
        "",
        f"- format: `{r['format']}`; started {r['started']}, updated {r['updated']}, "
        f"{'finished' if r.get('finished') else 'NOT FINISHED (cut short, or still running)'}"
        + (f" after {r['elapsedSeconds']} s of a {r['budgetSeconds']} s budget" if r.get("finished") else ""),
        f"- machine: {cell(r['machine'])}",
        f"- kit: {'small (rehearsal)' if kit.get('small') else 'full'}; {cell(kit.get('deno', '?'))}; "
        f"FFmpeg {cell(kit.get('ffmpeg', '?'))}; built {cell(kit.get('built', '?'))} in {kit.get('buildSeconds', '?')} s",
        f"- driver: {gpu_summary(r)}",
        f"- checks: {t['checks'].get('pass', 0)} pass, {t['checks'].get('fail', 0)} fail, "
        f"{t['checks'].get('skip', 0)} skip; phases: {cell(t['phases'])}",
        "",
        "| phase | status | seconds | limit | pass / fail / skip | reason |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for p in r["phases"]:
        n = {s: sum(1 for c in p["checks"] if c["status"] == s) for s in ("pass", "fail", "skip")}
        lines.append(f"| {p['name']} | **{p['status']}** | {p['seconds']} | {p['limitSeconds']} | "
                     f"{n['pass']} / {n['fail']} / {n['skip']} | {cell(p.get('reason', ''))} |")
    for p in r["phases"]:
        lines += ["", f"## {p['name']}: {p['status']} ({p['seconds']} s of {p['limitSeconds']} s)", ""]
        if p.get("reason"):
            lines += [f"{p['reason']}", ""]
        if p["checks"]:
            lines += ["| check | status | seconds | figures | reason |", "| --- | --- | --- | --- | --- |"]
            for c in p["checks"]:
                lines.append(f"| {cell(c['name'])} | {c['status']} | {c.get('seconds', '')} | "
                             f"{figures_text(c.get('figures') or {})} | {cell(c.get('reason', ''))} |")
        for tb in p.get("tables", []):
            lines += ["", f"**{tb['title']}**", "", "| " + " | ".join(tb["columns"]) + " |",
                      "| " + " | ".join("---" for _ in tb["columns"]) + " |"]
            lines += ["| " + " | ".join(cell(x) for x in row) + " |" for row in tb["rows"]]
        for k, v in p.get("info", {}).items():
            text = v if isinstance(v, str) else json.dumps(v, indent=2, default=str)
            lines += ["", f"<details><summary>{k}</summary>", "", "```", text.strip(), "```", "", "</details>"]
    return "\n".join(lines)


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(prog="report.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("init")
    a.add_argument("dir")
    a.add_argument("--kit", required=True)
    a.add_argument("--budget", type=float, required=True)
    b = sub.add_parser("phase")
    b.add_argument("dir")
    b.add_argument("name")
    b.add_argument("--result", required=True)
    b.add_argument("--exit", type=int, required=True)
    b.add_argument("--seconds", type=float, required=True)
    b.add_argument("--limit", type=float, required=True)
    b.add_argument("--log", default="")
    c = sub.add_parser("finish")
    c.add_argument("dir")
    c.add_argument("--seconds", type=float, required=True)
    args = ap.parse_args(argv)
    folder = Path(args.dir)
    if args.cmd == "init":
        folder.mkdir(parents=True, exist_ok=True)
        try:
            kit = json.loads((Path(args.kit) / "kit.json").read_text())
        except (OSError, ValueError) as e:
            kit = {"error": f"no kit.json: {e}"}
        report = {"format": FORMAT, "started": now(), "finished": False, "budgetSeconds": args.budget,
                  "machine": {"host": platform.node(), "cores": os.cpu_count(), "kernel": platform.release(),
                              "python": platform.python_version()},
                  "driverOverrides": {k: os.environ.get(k) for k in ("SLUICE_LIBCUDA", "SLUICE_LIBNVCUVID",
                                                                      "SLUICE_LIBNVML")},
                  "kit": kit, "phases": []}
        save(folder, report)
    elif args.cmd == "phase":
        report = load(folder)
        tail = ""
        if args.log:
            try:
                tail = " / ".join(Path(args.log).read_text(errors="replace").strip().splitlines()[-4:])[-600:]
            except OSError:
                pass
        entry = phase_entry(args.name, read_lines(args.result), args.exit, args.seconds, args.limit, tail)
        report["phases"] = [p for p in report["phases"] if p["name"] != args.name] + [entry]
        save(folder, report)
        print(f"gpu-report: {args.name}: {entry['status']}" + (f" ({entry['reason']})" if entry.get("reason") else ""),
              file=sys.stderr)
    else:
        report = load(folder)
        report["finished"] = True
        report["elapsedSeconds"] = round(args.seconds, 1)
        save(folder, report)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
