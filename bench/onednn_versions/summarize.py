#!/usr/bin/env python3
"""Per-shape table of two conv_bench result sets (run.sh writes them): A = oneDNN 2.x, B = 3.x.

    summarize.py RESULT_DIR BASE      # reads RESULT_DIR/BASE.v2.r*.tsv and RESULT_DIR/BASE.v3.r*.tsv

Per shape: the median over rounds of each round's median ms, B/A (< 1: 3.x faster), the spread of the
per-round medians ((max - min) / median, a noise gauge), the implementation and source layout each version picked, and
whether the destination checksums agree. Totals are weighted by the count column (sum count * ms), for
all shapes and per kind (grouped, 1x1, other); "paired" is the median over rounds of the ratio of that
round's two totals (the versions ran back to back in each round, so this cancels slow drifts).
Standard library only.
"""
import glob
import os
import statistics
import sys


def load(path):
    header, rows = [], {}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            if line.startswith("#"):
                header.append(line)
                continue
            shape, count, impl, layout, med, _min, _gflops, chk, comment = (line.split("\t") + [""] * 9)[:9]
            rows[shape] = dict(count=int(count), impl=f"{impl} {layout}", ms=float(med), chk=float(chk),
                               comment=comment)
    return header, rows


def kind(shape):
    n, ic, oc, h, w, kh, kw, s, p, g = map(int, shape.split())
    if g > 1:
        return "grouped"
    if kh == 1 and kw == 1:
        return "1x1"
    return "other"


def compact(shape):
    n, ic, oc, h, w, kh, kw, s, p, g = map(int, shape.split())
    t = f"{n}x{ic}x{h}x{w} ->{oc} k{kh}x{kw}"
    if s != 1:
        t += f" s{s}"
    if g != 1:
        t += f" g{g}"
    return t


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    rdir, base = sys.argv[1], sys.argv[2]
    runs = {}
    for v in ("v2", "v3"):
        files = sorted(glob.glob(os.path.join(rdir, f"{base}.{v}.r*.tsv")))
        if not files:
            sys.exit(f"summarize: no {base}.{v}.r*.tsv in {rdir}")
        runs[v] = [load(p) for p in files]
        for p, (h, rows) in zip(files, runs[v]):
            if not rows:
                sys.exit(f"summarize: {p} holds no results (did conv_bench_{v} start?)")
    labels = {}
    for v in runs:
        h = runs[v][0][0]
        labels[v] = h[0].split("runtime ")[1].split(" ")[0] if h and "runtime " in h[0] else v
        print(f"# {v}: " + " | ".join(x.lstrip("# ") for x in h[:2]))
    a, b = labels["v2"], labels["v3"]
    shapes = list(runs["v2"][0][1].keys())
    print(f"# {base}: {len(shapes)} shapes, {len(runs['v2'])} rounds; ms = median over rounds of per-round medians;"
          f" ratio = {b}/{a} (< 1: {b} faster)")
    hdr = (f"{'shape':<32} {'cnt':>3} {a + ' ms':>10} {b + ' ms':>10} {'ratio':>6} {'spr%':>9}  "
           f"{'impl ' + a:<32} {'impl ' + b:<32} chk")
    print(hdr)
    print("-" * len(hdr))
    totals = {v: {} for v in runs}
    per_round = {v: [dict() for _ in runs[v]] for v in runs}
    for s in shapes:
        cells = {}
        for v in runs:
            ms = [r[1][s]["ms"] for r in runs[v] if s in r[1]]
            med = statistics.median(ms) if ms else float("nan")
            spread = (max(ms) - min(ms)) / med * 100 if ms and med > 0 else float("nan")
            first = runs[v][0][1].get(s, {})
            cells[v] = dict(ms=med, spread=spread, impl=first.get("impl", "?"), chk=first.get("chk", float("nan")),
                            count=first.get("count", 1))
            k = kind(s)
            for kk in (k, "all"):
                totals[v][kk] = totals[v].get(kk, 0.0) + cells[v]["count"] * med
            for i, r in enumerate(runs[v]):
                if s in r[1]:
                    for kk in (k, "all"):
                        per_round[v][i][kk] = per_round[v][i].get(kk, 0.0) + r[1][s]["count"] * r[1][s]["ms"]
        ca, cb = cells["v2"], cells["v3"]
        ratio = cb["ms"] / ca["ms"] if ca["ms"] > 0 else float("nan")
        scale = max(abs(ca["chk"]), abs(cb["chk"]), 1.0)
        chk = "ok" if abs(ca["chk"] - cb["chk"]) <= 1e-4 * scale else "DIFF"
        print(f"{compact(s):<32} {ca['count']:>3} {ca['ms']:>10.4f} {cb['ms']:>10.4f} {ratio:>6.3f} "
              f"{ca['spread']:>4.0f}/{cb['spread']:<4.0f}  {ca['impl']:<32} {cb['impl']:<32} {chk}")
    print("-" * len(hdr))
    print(f"totals (sum count*ms)      {a + ' ms':>10} {b + ' ms':>10} {'ratio':>6} {'paired':>7} {'(min..max over rounds)'}")
    for kk in ("grouped", "1x1", "other", "all"):
        if kk not in totals["v2"]:
            continue
        ta, tb = totals["v2"][kk], totals["v3"][kk]
        pr = [rb[kk] / ra[kk] for ra, rb in zip(per_round["v2"], per_round["v3"]) if ra.get(kk) and kk in rb]
        paired = f"{statistics.median(pr):>7.3f} ({min(pr):.3f}..{max(pr):.3f})" if pr else ""
        print(f"  {kk:<24} {ta:>10.3f} {tb:>10.3f} {tb / ta:>6.3f} {paired}")


if __name__ == "__main__":
    main()
