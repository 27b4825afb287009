#!/usr/bin/env python3
"""`vkformer bench --compare` against the committed side-by-side results (bench/results/*.json):

- the markdown table it prints is the one computed here from the files' own numbers (ratio =
  vkformer t/s / llama.cpp t/s; % of copy = model_bytes * t/s / (copy_gbs * 1e9) for tg tests),
  row by row, with this test's own reading of the JSON, not the code under test;
- the SVG chart is written, well-formed XML, with one bar per measured figure;
- malformed files are refused (exit 1, nothing on stdout) with a message naming the file and
  the field: a missing probe, a string where t/s goes, an unknown engine, a bad test name,
  truncated JSON; an empty directory is refused naming the directory.

    test_bench_compare.py VKFORMER SOURCE_DIR
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def expected_table(files):
    rows, order = {}, []
    for path in sorted(files):
        doc = json.load(open(path))
        copy = doc["probes"]["copy_gbs"]
        for r in doc["runs"]:
            key = (doc["device"], doc["date"], r["model"], r["type"], r["test"], r["depth"])
            if key not in rows:
                rows[key] = {"copy": copy}
                order.append(key)
            rows[key][r["engine"]] = (r["ts"], r["model_bytes"])
    lines = ["| device | date | model | type | test | vkformer t/s | llama.cpp t/s | ratio | "
             "vkformer % of copy | llama.cpp % of copy |",
             "| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for key in order:
        device, date, model, wtype, test, depth = key
        row = rows[key]
        cells = []
        for e in ("vkformer", "llama.cpp"):
            cells.append("%.2f" % row[e][0] if e in row else "-")
        ratio = ("%.2f" % (row["vkformer"][0] / row["llama.cpp"][0])
                 if "vkformer" in row and "llama.cpp" in row else "-")
        pcts = []
        for e in ("vkformer", "llama.cpp"):
            if e in row and test.startswith("tg"):
                ts, nbytes = row[e]
                pcts.append("%.1f%%" % (100.0 * nbytes * ts / (row["copy"] * 1e9)))
            else:
                pcts.append("-")
        name = test if depth == 0 else "%s @ d%d" % (test, depth)
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" %
                     (device, date[:10], model, wtype, name, cells[0], cells[1], ratio, pcts[0], pcts[1]))
    return lines, sum(len(r) - 1 for r in rows.values()) + sum(
        1 for k in order for e in ("vkformer", "llama.cpp") if e in rows[k] and k[4].startswith("tg"))


def run(vkf, *args):
    return subprocess.run([vkf, "bench", "--compare", *args], capture_output=True, text=True,
                          timeout=60)


def main():
    vkf, src = sys.argv[1], sys.argv[2]
    files = sorted(glob.glob(os.path.join(src, "bench", "results", "*.json")))
    check(len(files) >= 1, "no bench/results/*.json committed")
    tmp = tempfile.mkdtemp(prefix="vkf-compare-")
    try:
        good = os.path.join(tmp, "good")
        os.mkdir(good)
        for f in files:
            shutil.copy(f, good)
        svg = os.path.join(tmp, "chart.svg")
        p = run(vkf, good, "--svg", svg)
        check(p.returncode == 0, "compare exit %d: %s" % (p.returncode, p.stderr))
        want, n_bars = expected_table(files)
        got = p.stdout.rstrip("\n").split("\n")
        check(got == want, "table differs:\n%s\n--- expected ---\n%s" % ("\n".join(got), "\n".join(want)))
        check(len(want) > 2, "no rows")
        try:
            root = ET.parse(svg).getroot()
            bars = [e for e in root.iter() if e.tag.endswith("rect") and any(
                c.tag.endswith("title") for c in e)]
            check(len(bars) == n_bars, "chart: %d bars, expected %d" % (len(bars), n_bars))
        except (OSError, ET.ParseError) as e:
            check(False, "chart: %s" % e)
        # both engines in one row: the measured runs plus the same runs as llama.cpp's at 0.8x
        # the t/s, so the ratio (1.25) and both % of copy columns are exercised on numbers this
        # test derived itself
        pair = os.path.join(tmp, "pair")
        os.mkdir(pair)
        doc = json.load(open(files[0]))
        twin = json.loads(json.dumps(doc))
        for r in twin["runs"]:
            r["engine"] = "llama.cpp" if r["engine"] == "vkformer" else "vkformer"
            r["ts"] *= 0.8
        doc["runs"] += twin["runs"]
        json.dump(doc, open(os.path.join(pair, "both.json"), "w"))
        p = run(vkf, pair, "--svg", os.path.join(tmp, "pair.svg"))
        want_pair, _ = expected_table([os.path.join(pair, "both.json")])
        check(p.returncode == 0 and p.stdout.rstrip("\n").split("\n") == want_pair,
              "both engines: exit %d\n%s\n--- expected ---\n%s" % (p.returncode, p.stdout, "\n".join(want_pair)))
        check(any(" | 1.25 | " in line for line in want_pair), "both engines: no row with a ratio")
        # the default chart path is DIR/compare.svg
        p = run(vkf, good)
        check(p.returncode == 0 and os.path.exists(os.path.join(good, "compare.svg")),
              "default --svg: exit %d, %s" % (p.returncode, p.stderr))

        base = json.load(open(files[0]))
        bad_cases = [
            ("no_copy", lambda d: d["probes"].pop("copy_gbs"), "probes.copy_gbs"),
            ("zero_copy", lambda d: d["probes"].__setitem__("copy_gbs", 0), "probes.copy_gbs"),
            ("ts_string", lambda d: d["runs"][1].__setitem__("ts", "fast"), "runs[1].ts"),
            ("engine", lambda d: d["runs"][0].__setitem__("engine", "ollama"), "runs[0].engine"),
            ("test_name", lambda d: d["runs"][0].__setitem__("test", "pp"), "runs[0].test"),
            ("depth", lambda d: d["runs"][0].__setitem__("depth", -1), "runs[0].depth"),
            ("no_device", lambda d: d.pop("device"), "device"),
            ("runs_empty", lambda d: d.__setitem__("runs", []), "runs"),
        ]
        for name, mutate, field in bad_cases:
            d = os.path.join(tmp, name)
            os.mkdir(d)
            doc = json.loads(json.dumps(base))
            mutate(doc)
            path = os.path.join(d, "bad.json")
            json.dump(doc, open(path, "w"))
            p = run(vkf, d)
            check(p.returncode == 1 and p.stdout == "" and path in p.stderr and field + ":" in p.stderr,
                  "%s: exit %d, stdout %r, stderr %r (expected the file and %s)" %
                  (name, p.returncode, p.stdout[:80], p.stderr, field))
        d = os.path.join(tmp, "truncated")
        os.mkdir(d)
        path = os.path.join(d, "cut.json")
        open(path, "w").write(open(files[0]).read()[:100])
        p = run(vkf, d)
        check(p.returncode == 1 and path in p.stderr and "not JSON" in p.stderr,
              "truncated: exit %d, %r" % (p.returncode, p.stderr))
        d = os.path.join(tmp, "empty")
        os.mkdir(d)
        p = run(vkf, d)
        check(p.returncode == 1 and d in p.stderr, "empty dir: exit %d, %r" % (p.returncode, p.stderr))
    finally:
        shutil.rmtree(tmp)
    if failures:
        print("%d failures" % len(failures))
        return 1
    print("ok: %d files" % len(files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
