#!/usr/bin/env python3
"""Joins one `bench/gpu-check.sh peer` call's raw outputs into its results file.

    python3 bench/peer_results.py RAW_DIR OUT_DIR

RAW_DIR holds what the call wrote (standard library only: the lent machines have a bare python3):
  probes.json                       `vkformer bench --kernels --only probes -o json`
  MODEL__TYPE__vkformer.json        `vkformer bench -m FILE ... -o json` (an array of tests)
  MODEL__TYPE__llama.cpp.json       `llama-bench -m FILE ... -o json` (an array of tests)
and OUT_DIR gets one file, DEVICE-DATE.json, in the shape `vkformer bench --compare` reads:

  {"device", "driver", "date", "probes": {"copy_gbs", "fma_gflops"},
   "runs": [{"engine", "model", "type", "test", "depth", "ts", "model_bytes"}]}

model_bytes is the size of the weights as the engine reports it (llama-bench's model_size, the
sum of the tensors' bytes; vkformer's the same): what one decode step reads, to within the
embedding table, of which it reads one row. A missing or failed engine run is left out (the
table shows "-"), and said on stderr.
"""
import datetime
import glob
import json
import os
import re
import sys


def slug(device):
    if device.lower().startswith("llvmpipe"):
        return "lavapipe"
    return re.sub(r"[^a-z0-9]+", "-", device.lower()).strip("-")


def runs_of(path, engine, model, wtype):
    try:
        rows = json.load(open(path))
    except (OSError, ValueError) as e:
        print("peer_results: %s: %s: left out" % (path, e), file=sys.stderr)
        return []
    out = []
    for r in rows:
        n_p, n_g = int(r.get("n_prompt", 0)), int(r.get("n_gen", 0))
        if (n_p > 0) == (n_g > 0):
            continue  # a combined pp+tg test: not one of the table's
        out.append({"engine": engine, "model": model, "type": wtype,
                    "test": "pp%d" % n_p if n_p else "tg%d" % n_g,
                    "depth": int(r.get("n_depth", 0)), "ts": float(r["avg_ts"]),
                    "model_bytes": int(r["model_size"])})
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    raw, out_dir = sys.argv[1], sys.argv[2]
    probes = json.load(open(os.path.join(raw, "probes.json")))
    peaks = probes["peaks"]
    runs = []
    for path in sorted(glob.glob(os.path.join(raw, "*__*__*.json"))):
        model, wtype, engine = os.path.basename(path)[:-5].split("__")
        runs += runs_of(path, engine, model, wtype)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    doc = {"device": probes["device"], "driver": probes["driver"], "date": date,
           "probes": {"copy_gbs": peaks["copy_gbs"], "fma_gflops": peaks["fma_f32_gflops"]},
           "runs": runs}
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "%s-%s.json" % (slug(doc["device"]), date[:16].replace(":", "")))
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print("peer_results: %s: %d runs" % (path, len(runs)), file=sys.stderr)
    print(path)


if __name__ == "__main__":
    main()
