#!/usr/bin/env python3
"""Helper of scripts/bench.sh (standard library only).

  bench_report.py check --db DB --table T --keys 1,2,3 --system NAME=PORT ...
      Reads the given keys from every system and fails unless all return the
      same (name, email, created): proof that they serve the same data set.
  bench_report.py report --raw raw.jsonl --out DIR [--json FILE] [--machine F]
      Keeps, for each (system, workload, connections, depth), the run with the
      median throughput; writes DIR/results.json, DIR/results.md (tables and
      ratios) and DIR/throughput.gp (gnuplot script for DIR/throughput.png),
      and FILE (the published JSON array) when given.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
from collections import defaultdict

SYSTEMS = ["hs-original", "hsd-embedded", "hsd-embedded-base", "hsd-mysql", "hsd-mysql-base",
           "memcached", "redis", "mysql-sql", "hsd-repl-primary", "hsd-repl-replicas",
           "hsd-mc-embedded", "hsd-mc-mysql"]
WORKLOADS = ["get", "multiget10", "update", "insert"]
COLORS = {
    "hs-original": "#9467bd",
    "hsd-embedded": "#d62728",
    "hsd-mysql": "#ff7f0e",
    "hsd-embedded-base": "#ff9896",
    "hsd-mysql-base": "#ffbb78",
    "memcached": "#1f77b4",
    "redis": "#2ca02c",
    "mysql-sql": "#7f7f7f",
    "hsd-repl-primary": "#8c564b",
    "hsd-repl-replicas": "#e377c2",
    "hsd-mc-embedded": "#17becf",
    "hsd-mc-mysql": "#bcbd22",
}


# ------------------------------------------------------------------ check
def recv_until(sock, done):
    buf = b""
    while not done(buf):
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("connection closed early: %r" % buf[:200])
        buf += chunk
    return buf


def hs_decode(tok):
    if tok == b"\x00":
        return None
    out, i = bytearray(), 0
    while i < len(tok):
        if tok[i] == 1 and i + 1 < len(tok):
            out.append(tok[i + 1] - 0x40)
            i += 2
        else:
            out.append(tok[i])
            i += 1
    return out.decode()


def rows_hs(port, db, table, keys):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    req = "P\t0\t%s\t%s\tPRIMARY\tname,email,created\n" % (db, table)
    req += "".join("0\t=\t1\t%d\n" % k for k in keys)
    s.sendall(req.encode())
    buf = recv_until(s, lambda b: b.count(b"\n") >= len(keys) + 1)
    lines = buf.split(b"\n")
    if lines[0] != b"0\t1":
        raise RuntimeError("open_index failed: %r" % lines[0])
    out = {}
    for k, line in zip(keys, lines[1:]):
        toks = line.split(b"\t")
        if toks[:2] != [b"0", b"3"] or len(toks) != 5:
            raise RuntimeError("key %d: %r" % (k, line))
        out[k] = tuple(hs_decode(t) for t in toks[2:])
    return out


def rows_memcached(port, keys, prefix=b"key:"):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    out = {}
    for k in keys:
        s.sendall(b"get %s%d\r\n" % (prefix, k))
        buf = recv_until(s, lambda b: b.endswith(b"END\r\n"))
        parts = buf.split(b"\r\n")
        if not parts[0].startswith(b"VALUE "):
            raise RuntimeError("key %d: %r" % (k, buf))
        out[k] = tuple(parts[1].decode().split("\t"))
    return out


def rows_redis(port, keys):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    out = {}
    for k in keys:
        key = b"key:%d" % k
        s.sendall(b"*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n" % (len(key), key))

        def done(b):
            if not b.startswith(b"$") or b"\r\n" not in b:
                return b.startswith(b"-") and b.endswith(b"\r\n")
            n = int(b[1 : b.index(b"\r\n")])
            return n < 0 or len(b) >= b.index(b"\r\n") + 2 + n + 2

        buf = recv_until(s, done)
        if not buf.startswith(b"$") or buf.startswith(b"$-1"):
            raise RuntimeError("key %d: %r" % (k, buf))
        body = buf[buf.index(b"\r\n") + 2 : -2]
        out[k] = tuple(body.decode().split("\t"))
    return out


def rows_mysql(port, db, table, keys):
    sql = "SELECT id, name, email, created FROM `%s`.`%s` WHERE id IN (%s)" % (
        db,
        table,
        ",".join(str(k) for k in keys),
    )
    r = subprocess.run(
        ["mariadb", "--no-defaults", "-h127.0.0.1", "-P%d" % port, "-uhsd", "-phsd",
         "-N", "-B", "-e", sql],
        check=True, capture_output=True, text=True,
    )
    out = {}
    for line in r.stdout.splitlines():
        f = line.split("\t")
        out[int(f[0])] = tuple(f[1:])
    return out


def cmd_check(a):
    keys = [int(k) for k in a.keys.split(",")]
    got = {}
    for spec in a.system:
        name, port = spec.split("=")
        port = int(port)
        if name.startswith("hsd-mc-"):
            got[name] = rows_memcached(port, keys, prefix=b"")
        elif name.startswith("hsd-") or name == "hs-original":
            got[name] = rows_hs(port, a.db, a.table, keys)
        elif name == "memcached":
            got[name] = rows_memcached(port, keys)
        elif name == "redis":
            got[name] = rows_redis(port, keys)
        elif name == "mysql-sql":
            got[name] = rows_mysql(port, a.db, a.table, keys)
        else:
            raise SystemExit("unknown system " + name)
    names = list(got)
    ref = got[names[0]]
    bad = 0
    for k in keys:
        vals = {n: got[n].get(k) for n in names}
        if ref.get(k) is None or any(v != ref[k] for v in vals.values()):
            bad += 1
            print("check: key %d differs: %r" % (k, vals), file=sys.stderr)
    print("check: %d keys x %d systems (%s): %s; e.g. key %d = %r" % (
        len(keys), len(names), ", ".join(names), "MISMATCH" if bad else "identical",
        keys[-1], ref.get(keys[-1])), file=sys.stderr)
    return 1 if bad else 0


# ------------------------------------------------------------------ report
def load_medians(raw):
    runs = defaultdict(list)
    with open(raw) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            res = r["result"]
            res["load1"] = r.get("load1")
            res["cpu_by_process"] = cpu_by_process(r.get("procs"), res.get("cpu_by_pid"))
            key = (r["label"], res["workload"], res["connections"], res["depth"])
            runs[key].append(res)
    med = {}
    for key, rs in runs.items():
        rs.sort(key=lambda x: x["rps"])
        m = dict(rs[(len(rs) - 1) // 2])
        m["all_rps"] = [round(x["rps"]) for x in rs]
        med[key] = m
    return med


def cpu_by_process(procs, by_pid):
    """Server CPU µs/req per process name ({"hsd": 40.1, "mariadbd": 55.0}):
    bench.sh names the pids of --server-pid in order ("hsd,mariadbd"),
    hsbench measures each; processes of one name (three mariadbd of a
    replicated set) are summed. None when either is missing."""
    if not procs or not by_pid:
        return None
    names = procs.split(",")
    if len(names) != len(by_pid):
        return None
    out = {}
    for name, p in zip(names, by_pid):
        out[name] = round(out.get(name, 0.0) + p["us_per_req"], 2)
    return out


def fmt_split(split):
    """"hsd 40.1 + mariadbd 55.0" for two processes or more, "-" otherwise."""
    if not split or len(split) < 2:
        return "-"
    return " + ".join("%s %.1f" % (k, v) for k, v in split.items())


def fmt_k(rps):
    if rps >= 100_000:
        return "%.0fk" % (rps / 1000)
    if rps >= 1000:
        return "%.1fk" % (rps / 1000)
    return "%.0f" % rps


def fmt_us(us):
    if us is None:
        return "-"
    if us >= 10_000:
        return "%.0f ms" % (us / 1000)
    if us >= 1000:
        return "%.1f ms" % (us / 1000)
    return "%.0f µs" % us


def fmt_cpu(c):
    return "-" if c is None else "%.1f" % c


def fmt_ratio(x):
    return "-" if x is None else "%.2f×" % x


def order(keys, ref):
    return [k for k in ref if k in keys]


def cmd_report(a):
    med = load_medians(a.raw)
    systems = order({k[0] for k in med}, SYSTEMS)
    workloads = order({k[1] for k in med}, WORKLOADS)
    conns = sorted({k[2] for k in med})
    depths = sorted({k[3] for k in med})

    published = []
    detail = []
    for (s, w, c, d), m in sorted(
        med.items(), key=lambda kv: (WORKLOADS.index(kv[0][1]), SYSTEMS.index(kv[0][0]), kv[0][2], kv[0][3])
    ):
        pub = {
            "system": s, "workload": w, "connections": c, "depth": d,
            "rps": round(m["rps"], 1), "p50_us": m["p50_us"], "p99_us": m["p99_us"],
            "cpu_us_per_req": m["cpu_us_per_req"],
            "cpu_by_process": m.get("cpu_by_process"),
        }
        published.append(pub)
        det = dict(pub)
        det.update({
            "all_rps": m["all_rps"], "client_cpu_us_per_req": m.get("client_cpu_us_per_req"),
            "errors": m.get("errors"), "requests": m.get("requests"), "seconds": m.get("seconds"),
            "load1": m.get("load1"),
        })
        detail.append(det)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(detail, f, indent=1)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(published, f, indent=1)
            f.write("\n")

    # Peaks: the best median throughput of each system per workload.
    peak = {}
    for (s, w, c, d), m in med.items():
        if (s, w) not in peak or m["rps"] > peak[(s, w)]["rps"]:
            peak[(s, w)] = dict(m, c=c, d=d)

    def ratio(w, s, base):
        if (s, w) in peak and (base, w) in peak and peak[(base, w)]["rps"] > 0:
            return peak[(s, w)]["rps"] / peak[(base, w)]["rps"]
        return None

    md = []
    md.append("### Peak throughput per workload (best point of the sweep), and ratios of peaks\n")
    md.append("| workload | system | peak req/s | at conns×depth | p99 there | server CPU µs/req "
              "| ÷ hs-original | ÷ mysql-sql | ÷ memcached |")
    md.append("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for w in workloads:
        for s in systems:
            p = peak.get((s, w))
            if not p:
                continue
            md.append("| %s | %s | %s | %d×%d | %s | %s | %s | %s | %s |" % (
                w, s, fmt_k(p["rps"]), p["c"], p["d"], fmt_us(p["p99_us"]),
                fmt_cpu(p["cpu_us_per_req"]), fmt_ratio(ratio(w, s, "hs-original")),
                fmt_ratio(ratio(w, s, "mysql-sql")), fmt_ratio(ratio(w, s, "memcached"))))
    md.append("")

    def point_ratio(s, w, c, d, base):
        """s at (c, d) over base at the same point; mysql-sql cannot
        pipeline, so at depth > 1 it is its depth-1 figure."""
        a_ = med.get((s, w, c, d))
        bd = 1 if base == "mysql-sql" else d
        b_ = med.get((base, w, c, bd))
        if a_ and b_ and b_["rps"]:
            return a_["rps"] / b_["rps"]
        return None

    # Every point: each system over the original and over SQL.
    md.append("### Every point as ratios: ÷ hs-original / ÷ mysql-sql\n")
    md.append("Same workload, connections and depth; mysql-sql cannot pipeline, so at depth 16 "
              "the SQL figure is its depth-1 figure at the same connections.\n")
    shown = [s for s in systems if s not in ("hs-original",)]
    for w in workloads:
        md.append("#### %s\n" % w)
        md.append("| conns×depth | " + " | ".join(shown) + " |")
        md.append("| --- |" + " ---: |" * len(shown))
        for c in conns:
            for d in depths:
                cells = []
                for s in shown:
                    if (s, w, c, d) not in med:
                        cells.append("-")
                        continue
                    ro = point_ratio(s, w, c, d, "hs-original")
                    rs = point_ratio(s, w, c, d, "mysql-sql") if s != "mysql-sql" else None
                    cells.append("%s / %s" % (fmt_ratio(ro), fmt_ratio(rs)))
                if any(x != "-" for x in cells):
                    md.append("| %d×%d | %s |" % (c, d, " | ".join(cells)))
        md.append("")

    md.append("### Goals (this run)\n")
    md.append("| goal | measured | met? |")
    md.append("| --- | --- | --- |")
    for text, measured, met in evaluate_goals(med, peak, conns, depths):
        md.append("| %s | %s | %s |" % (text, measured, "yes" if met else "**no**"))
    md.append("")

    for w in workloads:
        md.append("### %s: median req/s · p99 · server CPU µs/req\n" % w)
        md.append("| conns×depth | " + " | ".join(systems) + " |")
        md.append("| --- |" + " ---: |" * len(systems))
        for c in conns:
            for d in depths:
                cells = []
                for s in systems:
                    m = med.get((s, w, c, d))
                    cells.append("%s · %s · %s" % (fmt_k(m["rps"]), fmt_us(m["p99_us"]), fmt_cpu(m["cpu_us_per_req"]))
                                 if m else "-")
                if any(x != "-" for x in cells):
                    md.append("| %d×%d | %s |" % (c, d, " | ".join(cells)))
        md.append("")

    md.extend(depth1_table(med, systems, workloads, conns))

    md.append("### Every point (median of the runs)\n")
    md.append("| system | workload | conns | depth | req/s | p50 µs | p99 µs | server CPU µs/req "
              "| by process | client CPU µs/req | runs (req/s) |")
    md.append("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- |")
    for det in detail:
        md.append("| %s | %s | %d | %d | %.0f | %.1f | %.1f | %s | %s | %s | %s |" % (
            det["system"], det["workload"], det["connections"], det["depth"], det["rps"],
            det["p50_us"], det["p99_us"], fmt_cpu(det["cpu_us_per_req"]),
            fmt_split(det["cpu_by_process"]),
            fmt_cpu(det["client_cpu_us_per_req"]), " / ".join(str(x) for x in det["all_rps"])))
    md.append("")
    if a.machine and os.path.exists(a.machine):
        md.append("### Machine\n")
        md.append("```")
        md.append(open(a.machine).read().rstrip())
        md.append("```")
    with open(os.path.join(a.out, "results.md"), "w") as f:
        f.write("\n".join(md) + "\n")

    write_gnuplot(a.out, med, systems, workloads, depths)
    write_ratio_gnuplot(a.out, med, systems, workloads, depths)
    # A short summary on stdout.
    print("\n".join(md[: md.index("### get: median req/s · p99 · server CPU µs/req")] if
                    "### get: median req/s · p99 · server CPU µs/req" in md else md[:40]))
    return 0


DEPTH1_WORKLOADS = ["get", "update", "insert"]
DEPTH1_CONNS = [1, 16, 64, 256]


def depth1_table(med, systems, workloads, conns):
    """Markdown lines: get, update and insert at 1, 16, 64 and 256 x 1 (the
    points the sweep has) on every system: req/s, ratio to mysql-sql, and
    server CPU µs/req split by process where a system has two or more."""
    shown_w = [w for w in DEPTH1_WORKLOADS if w in workloads]
    shown_c = [c for c in DEPTH1_CONNS if c in conns]
    if not shown_w or not shown_c:
        return []
    md = ["### Depth 1: req/s (÷ mysql-sql) · server CPU µs/req (by process)\n"]
    md.append("| workload | conns×depth | " + " | ".join(systems) + " |")
    md.append("| --- | --- |" + " --- |" * len(systems))
    for w in shown_w:
        for c in shown_c:
            cells = []
            sql = med.get(("mysql-sql", w, c, 1))
            for s in systems:
                m = med.get((s, w, c, 1))
                if not m:
                    cells.append("-")
                    continue
                cell = fmt_k(m["rps"])
                if sql and sql["rps"] and s != "mysql-sql":
                    cell += " (%s)" % fmt_ratio(m["rps"] / sql["rps"])
                cell += " · %s" % fmt_cpu(m["cpu_us_per_req"])
                split = m.get("cpu_by_process")
                if split and len(split) > 1:
                    cell += " (%s)" % fmt_split(split)
                cells.append(cell)
            if any(x != "-" for x in cells):
                md.append("| %s | %d×1 | %s |" % (w, c, " | ".join(cells)))
    md.append("")
    return md


def evaluate_goals(med, peak, conns, depths):
    """The speed goals of hsd's issues, each as (text, measured, met)."""
    out = []

    def rps(s, w, c, d):
        m = med.get((s, w, c, d))
        return m["rps"] if m else None

    def every(s, w, base, want, points, base_depth=None):
        got = []
        for c, d in points:
            a_, b_ = rps(s, w, c, d), rps(base, w, c, base_depth or d)
            if a_ and b_:
                got.append((c, d, a_ / b_))
        if not got:
            return
        worst = min(got, key=lambda x: x[2])
        text = "%s: %s ≥ %.2f× %s at every point (%s)" % (
            w, s, want, base, ", ".join("%d×%d" % (c, d) for c, d, _ in got))
        measured = "min %.2f× at %d×%d; " % (worst[2], worst[0], worst[1]) + ", ".join(
            "%.2f" % r for _, _, r in got)
        out.append((text, measured, worst[2] >= want))

    def at_peak(s, w, base, want):
        if (s, w) in peak and (base, w) in peak and peak[(base, w)]["rps"]:
            r = peak[(s, w)]["rps"] / peak[(base, w)]["rps"]
            out.append(("%s: %s peak ≥ %.2f× %s peak" % (w, s, want, base), "%.2f×" % r, r >= want))

    all_points = [(c, d) for c in conns for d in depths]
    depth1 = [(c, 1) for c in conns]
    from16 = [(c, 1) for c in conns if c >= 16]
    for w in ("get", "update", "insert"):
        every("hsd-embedded", w, "hs-original", 1.0, all_points)
    every("hsd-mysql", "get", "mysql-sql", 1.0, [(1, 1)])
    every("hsd-mysql", "get", "mysql-sql", 1.5, from16)
    at_peak("hsd-mysql", "get", "hs-original", 0.6)
    for w in ("insert", "update"):
        every("hsd-mysql", w, "mysql-sql", 1.5, from16)
        every("hsd-mysql", w, "mysql-sql", 1.0, [(1, 1)])
        at_peak("hsd-mysql", w, "hs-original", 0.5)
    at_peak("hsd-mysql", "multiget10", "mysql-sql", 2.0)
    every("hsd-mysql", "multiget10", "mysql-sql", 1.0, all_points, base_depth=1)

    # Server CPU and p99 at 1 x 1, against the original.
    for s, limit in (("hsd-embedded", 1.0), ("hsd-mysql", 2.0)):
        a_, b_ = med.get((s, "get", 1, 1)), med.get(("hs-original", "get", 1, 1))
        if a_ and b_:
            if a_.get("cpu_us_per_req") and b_.get("cpu_us_per_req"):
                r = a_["cpu_us_per_req"] / b_["cpu_us_per_req"]
                out.append(("get 1×1: %s server CPU ≤ %.0f× hs-original's" % (s, limit),
                            "%.1f vs %.1f µs (%.2f×)" % (a_["cpu_us_per_req"], b_["cpu_us_per_req"], r),
                            r <= limit))
            r = a_["p99_us"] / b_["p99_us"] if b_["p99_us"] else None
            if r is not None:
                out.append(("get 1×1: %s p99 ≤ %.0f× hs-original's" % (s, limit),
                            "%.0f vs %.0f µs (%.2f×)" % (a_["p99_us"], b_["p99_us"], r), r <= limit))
    return out


def write_ratio_gnuplot(out, med, systems, workloads, depths):
    """Each system's throughput over the original's, point by point."""
    if not any(k[0] == "hs-original" for k in med):
        return
    png = os.path.join(out, "ratio.png")
    conns = sorted({k[2] for k in med})
    g = []
    g.append('set terminal pngcairo size 1800,900 font "DejaVu Sans,10"')
    g.append('set output "%s"' % png)
    g.append("set logscale x 2")
    g.append("set xrange [%g:%g]" % (conns[0] / 1.25, conns[-1] * 1.25))
    g.append("set xtics (%s)" % ", ".join(str(c) for c in conns))
    g.append("set grid ytics xtics lc rgb '#dddddd'")
    g.append("set logscale y 2")
    g.append("set yrange [0.03125:16]")
    g.append('set ytics ("1/32" 0.03125, "1/16" 0.0625, "1/8" 0.125, "1/4" 0.25, "1/2" 0.5, "1" 1, "2" 2, "4" 4, "8" 8, "16" 16)')
    g.append("unset key")
    blocks = {}
    for (s, w, c, d), m in med.items():
        if s == "hs-original":
            continue
        bd = 1 if s == "mysql-sql" else d
        base = med.get(("hs-original", w, c, bd if s == "mysql-sql" else d))
        mine = med.get((s, w, c, bd)) if s == "mysql-sql" else m
        if base and mine and base["rps"]:
            blocks.setdefault((s, w, d), []).append((c, mine["rps"] / base["rps"]))
    for (s, w, d), pts in blocks.items():
        g.append("$R_%s_%s_%d << EOD" % (s.replace("-", "_"), w, d))
        for c, r in sorted(pts):
            g.append("%d %.4f" % (c, r))
        g.append("EOD")
    g.append('set multiplot layout %d,%d margins 0.05,0.99,0.12,0.91 spacing 0.055,0.11 '
             'title "throughput ÷ the original HandlerSocket plugin (same MariaDB, same load generator; '
             'above 1: faster than the original)" font ",13"' % (len(depths), len(workloads)))
    others = [s for s in systems if s != "hs-original"]
    for d in depths:
        for w in workloads:
            g.append('set title "%s, pipeline depth %d" font ",11"' % (w, d))
            g.append("unset label")
            if (w, d) == (workloads[0], depths[0]):
                x0 = 0.5 - 0.075 * len(others)
                for i, s in enumerate(others):
                    g.append('set label %d "━━●━━ %s" at screen %.3f,0.035 left tc rgb "%s" font ",12"'
                             % (i + 1, s, x0 + 0.15 * i, COLORS[s]))
            g.append('set xlabel "connections"')
            g.append('set ylabel "÷ hs-original (log scale)"')
            plots = ["1 with lines lw 2 dt 2 lc rgb '#9467bd'"]
            for s in others:
                if (s, w, d) in blocks:
                    plots.append('$R_%s_%s_%d using 1:2 with linespoints lw 2 pt 7 ps 0.8 lc rgb "%s"'
                                 % (s.replace("-", "_"), w, d, COLORS[s]))
            g.append("plot " + ", \\\n     ".join(plots))
    g.append("unset multiplot")
    with open(os.path.join(out, "ratio.gp"), "w") as f:
        f.write("\n".join(g) + "\n")


def write_gnuplot(out, med, systems, workloads, depths):
    png = os.path.join(out, "throughput.png")
    g = []
    g.append('set terminal pngcairo size 1800,900 font "DejaVu Sans,10"')
    g.append('set output "%s"' % png)
    conns = sorted({k[2] for k in med})
    g.append("set logscale x 2")
    g.append("set xrange [%g:%g]" % (conns[0] / 1.25, conns[-1] * 1.25))
    g.append("set xtics (%s)" % ", ".join(str(c) for c in conns))
    g.append("set grid ytics xtics lc rgb '#dddddd'")
    g.append("set key top left font ',9' opaque box")
    # Log scale: the systems span three orders of magnitude, and equal
    # ratios show as equal distances.
    g.append("set logscale y 10")
    g.append("set yrange [*:*]")
    g.append('set ytics ("100" 0.1, "200" 0.2, "500" 0.5, "1k" 1, "2k" 2, "5k" 5, "10k" 10, "20k" 20, '
             '"50k" 50, "100k" 100, "200k" 200, "500k" 500, "1M" 1000, "2M" 2000, "5M" 5000)')
    blocks = {}
    for (s, w, c, d), m in med.items():
        blocks.setdefault((s, w, d), []).append((c, m["rps"] / 1000.0))
    for (s, w, d), pts in blocks.items():
        name = "$D_%s_%s_%d" % (s.replace("-", "_"), w, d)
        g.append("%s << EOD" % name)
        for c, r in sorted(pts):
            g.append("%d %.3f" % (c, r))
        g.append("EOD")
    nrow = len(depths)
    g.append('set multiplot layout %d,%d margins 0.05,0.99,0.12,0.91 spacing 0.055,0.11 '
             'title "hsd vs the original plugin, memcached, Redis, MariaDB SQL: throughput (median req/s) vs connections, '
             'one load generator, loopback\\n(mysql-sql cannot pipeline: in the depth-16 row its depth-1 '
             'figures are repeated, dashed)" font ",13"'
             % (nrow, len(workloads)))
    for d in depths:
        for w in workloads:
            g.append('set title "%s, pipeline depth %d" font ",11"' % (w, d))
            # One legend per row (same colours everywhere), so lines stay visible.
            # One legend for the whole figure, below the panels, drawn as
            # coloured labels with the first panel.
            g.append("unset key")
            g.append("unset label")
            if (w, d) == (workloads[0], depths[0]):
                x0 = 0.5 - 0.075 * len(systems)
                for i, s in enumerate(systems):
                    g.append('set label %d "━━●━━ %s" at screen %.3f,0.035 left tc rgb "%s" font ",12"'
                             % (i + 1, s, x0 + 0.15 * i, COLORS[s]))
            g.append('set xlabel "connections"')
            g.append('set ylabel "req/s (log scale)"')
            plots = []
            for s in systems:
                if (s, w, d) in blocks:
                    plots.append('$D_%s_%s_%d using 1:2 with linespoints lw 2 pt 7 ps 0.8 lc rgb "%s" title "%s"'
                                 % (s.replace("-", "_"), w, d, COLORS[s], s))
                elif s == "mysql-sql" and (s, w, 1) in blocks:
                    plots.append('$D_%s_%s_1 using 1:2 with linespoints lw 1.5 dt 2 pt 6 ps 0.8 lc rgb "%s" '
                                 'title "mysql-sql (depth 1: no pipelining)"' % (s.replace("-", "_"), w, COLORS[s]))
            if plots:
                g.append("plot " + ", \\\n     ".join(plots))
            else:
                g.append("set multiplot next")
    g.append("unset multiplot")
    with open(os.path.join(out, "throughput.gp"), "w") as f:
        f.write("\n".join(g) + "\n")


# ------------------------------------------------------------------ perfsum
PERF_AREAS = [
    ("MariaDB server (mariadbd threads, kernel time included)",
     lambda c, d, k, s: c.startswith("mariadbd") or d.startswith("mariadbd")),
    ("SQLite itself (B-tree search, VDBE, pager/WAL)", lambda c, d, k, s: d == "hsd" and k == "."
     and "::" not in s and not s.startswith(("<", "0x"))),
    ("kernel (TCP loopback send/receive, epoll, scheduling)", lambda c, d, k, s: k == "k"),
    ("malloc / free (and Rust's allocation paths)", lambda c, d, k, s: (d.startswith("libc") and any(
        x in s for x in ("malloc", "free", "_int_", "realloc", "calloc", "consolidate", "tcache")))
     or s.startswith(("alloc::", "__rustc::", "__rust_", "__rdl_"))),
    ("memcpy / memcmp / memchr", lambda c, d, k, s: d.startswith("libc") and s.startswith(("__mem", "mem", "__str"))),
    ("hashing", lambda c, d, k, s: "hash" in s.lower()),
    ("rusqlite glue", lambda c, d, k, s: "rusqlite" in s),
    ("hs-proto (parse requests, encode responses)", lambda c, d, k, s: "hs_proto" in s),
    ("mysql-wire and the MySQL link (packets, rows)", lambda c, d, k, s: "mysql_wire" in s or "backend::mysql" in s),
    ("metrics (prometheus)", lambda c, d, k, s: "prometheus" in s),
    ("tokio runtime", lambda c, d, k, s: "tokio" in s),
    ("hsd (session, exec, dispatch, backend glue)", lambda c, d, k, s: "hsd::" in s),
    ("libc other (syscall wrappers, locks, fcntl)", lambda c, d, k, s: d.startswith("libc")),
]


def cmd_perfsum(a):
    """Sums a flat perf report (--sort comm,dso,symbol or dso,symbol) by area."""
    areas = defaultdict(float)
    for line in open(a.flat):
        f = line.split()
        if len(f) < 4 or not f[0].endswith("%"):
            continue
        kind_at = next((i for i, x in enumerate(f) if x in ("[k]", "[.]")), None)
        if kind_at is None or kind_at < 2:
            continue
        pct = float(f[0][:-1])
        dso, kind = f[kind_at - 1], f[kind_at][1]
        comm = f[1] if kind_at == 3 else ""
        sym = " ".join(x for x in f[kind_at + 1:] if x != "-")
        for name, match in PERF_AREAS:
            if match(comm, dso, kind, sym):
                areas[name] += pct
                break
        else:
            areas["other"] += pct
    print("| where the CPU time goes | share |")
    print("| --- | ---: |")
    for name, pct in sorted(areas.items(), key=lambda kv: -kv[1]):
        print("| %s | %.1f%% |" % (name, pct))
    return 0


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("--db", required=True)
    c.add_argument("--table", required=True)
    c.add_argument("--keys", required=True)
    c.add_argument("--system", action="append", default=[])
    r = sub.add_parser("report")
    r.add_argument("--raw", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--json")
    r.add_argument("--machine")
    ps = sub.add_parser("perfsum")
    ps.add_argument("flat", help="perf report --no-children --stdio --sort dso,symbol -g none")
    a = p.parse_args()
    return {"check": cmd_check, "report": cmd_report, "perfsum": cmd_perfsum}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
