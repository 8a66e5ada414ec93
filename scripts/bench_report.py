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

SYSTEMS = ["hsd-embedded", "hsd-mysql", "memcached", "redis", "mysql-sql"]
WORKLOADS = ["get", "multiget10", "update", "insert"]
COLORS = {
    "hsd-embedded": "#d62728",
    "hsd-mysql": "#ff7f0e",
    "memcached": "#1f77b4",
    "redis": "#2ca02c",
    "mysql-sql": "#7f7f7f",
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


def rows_memcached(port, keys):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    out = {}
    for k in keys:
        s.sendall(b"get key:%d\r\n" % k)
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
        if name.startswith("hsd-"):
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
            key = (r["label"], res["workload"], res["connections"], res["depth"])
            runs[key].append(res)
    med = {}
    for key, rs in runs.items():
        rs.sort(key=lambda x: x["rps"])
        m = dict(rs[(len(rs) - 1) // 2])
        m["all_rps"] = [round(x["rps"]) for x in rs]
        med[key] = m
    return med


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
    md.append("### Peak throughput per workload (best point of the sweep), and ratios\n")
    md.append("| workload | system | peak req/s | at conns×depth | p99 there | server CPU µs/req | ÷ mysql-sql | ÷ memcached |")
    md.append("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for w in workloads:
        for s in systems:
            p = peak.get((s, w))
            if not p:
                continue
            md.append("| %s | %s | %s | %d×%d | %s | %s | %s | %s |" % (
                w, s, fmt_k(p["rps"]), p["c"], p["d"], fmt_us(p["p99_us"]),
                fmt_cpu(p["cpu_us_per_req"]), fmt_ratio(ratio(w, s, "mysql-sql")),
                fmt_ratio(ratio(w, s, "memcached"))))
    md.append("")

    # Same point, depth 1 (where every system can play): ratios at each conns.
    md.append("### Ratios at equal footing: depth 1, same connections\n")
    md.append("| workload | conns | " + " | ".join("%s ÷ mysql-sql" % s for s in systems if s != "mysql-sql")
              + " | " + " | ".join("%s ÷ memcached" % s for s in systems if s.startswith("hsd")) + " |")
    md.append("| --- | ---: |" + " ---: |" * (len([s for s in systems if s != "mysql-sql"]) + len([s for s in systems if s.startswith("hsd")])))
    for w in workloads:
        for c in conns:
            cells = []
            for s in systems:
                if s == "mysql-sql":
                    continue
                a_, b_ = med.get((s, w, c, 1)), med.get(("mysql-sql", w, c, 1))
                cells.append(fmt_ratio(a_["rps"] / b_["rps"]) if a_ and b_ and b_["rps"] else "-")
            for s in systems:
                if not s.startswith("hsd"):
                    continue
                a_, b_ = med.get((s, w, c, 1)), med.get(("memcached", w, c, 1))
                cells.append(fmt_ratio(a_["rps"] / b_["rps"]) if a_ and b_ and b_["rps"] else "-")
            md.append("| %s | %d | %s |" % (w, c, " | ".join(cells)))
    md.append("")

    if 16 in depths or len(depths) > 1:
        dp = max(depths)
        others = [s for s in systems if s not in ("memcached", "mysql-sql")]
        md.append("### Ratios at equal footing: depth %d (pipelined), same connections, ÷ memcached\n" % dp)
        md.append("| workload | conns | " + " | ".join("%s ÷ memcached" % s for s in others) + " |")
        md.append("| --- | ---: |" + " ---: |" * len(others))
        for w in workloads:
            for c in conns:
                cells = []
                for s in others:
                    a_, b_ = med.get((s, w, c, dp)), med.get(("memcached", w, c, dp))
                    cells.append(fmt_ratio(a_["rps"] / b_["rps"]) if a_ and b_ and b_["rps"] else "-")
                md.append("| %s | %d | %s |" % (w, c, " | ".join(cells)))
        md.append("")

    goals = [
        ("get", "hsd-embedded", "mysql-sql", 7.5),
        ("get", "hsd-embedded", "memcached", 1.8),
        ("get", "hsd-mysql", "mysql-sql", 5.0),
        ("insert", "hsd-embedded", "mysql-sql", 3.0),
        ("insert", "hsd-mysql", "mysql-sql", 3.0),
    ]
    md.append("### Goals (peak ÷ peak, this run)\n")
    md.append("| goal | measured | met? |")
    md.append("| --- | ---: | --- |")
    for w, s, base, want in goals:
        r = ratio(w, s, base)
        if r is None:
            continue
        md.append("| %s: %s ≥ %.1f× %s | %.2f× | %s |" % (w, s, want, base, r, "yes" if r >= want else "**no**"))
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

    md.append("### Every point (median of the runs)\n")
    md.append("| system | workload | conns | depth | req/s | p50 µs | p99 µs | server CPU µs/req | client CPU µs/req | runs (req/s) |")
    md.append("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for det in detail:
        md.append("| %s | %s | %d | %d | %.0f | %.1f | %.1f | %s | %s | %s |" % (
            det["system"], det["workload"], det["connections"], det["depth"], det["rps"],
            det["p50_us"], det["p99_us"], fmt_cpu(det["cpu_us_per_req"]),
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
    # A short summary on stdout.
    print("\n".join(md[: md.index("### get: median req/s · p99 · server CPU µs/req")] if
                    "### get: median req/s · p99 · server CPU µs/req" in md else md[:40]))
    return 0


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
             'title "hsd vs memcached vs Redis vs MariaDB SQL: throughput (median req/s) vs connections, '
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
    ("SQLite itself (B-tree search, VDBE, pager/WAL)", lambda d, k, s: d == "hsd" and k == "."
     and "::" not in s and not s.startswith(("<", "0x"))),
    ("kernel (TCP loopback send/receive, epoll, scheduling)", lambda d, k, s: k == "k"),
    ("malloc / free (and Rust's allocation paths)", lambda d, k, s: (d.startswith("libc") and any(
        x in s for x in ("malloc", "free", "_int_", "realloc", "calloc", "consolidate", "tcache")))
     or s.startswith(("alloc::", "__rustc::", "__rust_", "__rdl_"))),
    ("memcpy / memcmp / memchr", lambda d, k, s: d.startswith("libc") and s.startswith(("__mem", "mem", "__str"))),
    ("hashing (SipHash: statement shape and statement-cache lookups)", lambda d, k, s: "hash" in s.lower()),
    ("rusqlite glue (statement cache, binding, rows)", lambda d, k, s: "rusqlite" in s),
    ("hs-proto (parse requests, encode responses)", lambda d, k, s: "hs_proto" in s),
    ("metrics (prometheus)", lambda d, k, s: "prometheus" in s),
    ("tokio runtime", lambda d, k, s: "tokio" in s),
    ("hsd (session, exec, backend glue)", lambda d, k, s: "hsd::" in s),
    ("libc other (syscall wrappers, locks, fcntl)", lambda d, k, s: d.startswith("libc")),
]


def cmd_perfsum(a):
    areas = defaultdict(float)
    total = 0.0
    for line in open(a.flat):
        f = line.split()
        if len(f) < 4 or not f[0].endswith("%") or not f[2].startswith("["):
            continue
        pct, dso, kind = float(f[0][:-1]), f[1], f[2][1]
        sym = " ".join(x for x in f[3:] if x != "-")
        total += pct
        for name, match in PERF_AREAS:
            if match(dso, kind, sym):
                areas[name] += pct
                break
        else:
            areas["other"] += pct
    print("| where hsd's CPU time goes | share |")
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
