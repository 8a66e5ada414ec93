#!/usr/bin/env python3
"""scripts/readme-check.py: the README's quick starts, run as written.

Reads README.md and runs, in a fresh directory with the binary given
(HSD_BIN; `target/release/hsd` and `cargo run --release -p hsd --` in the
text stand for it):

- "Two commands": `serve --demo`, then the `nc` session of "Try it" sent
  line by line, each answer compared with the README's;
- the Python session of "Try it" as a doctest (the client from
  clients/python on sys.path);
- the `hsd sql` lines of "Try it";
- "The memcached door": its three commands, then the `printf ... | nc`
  line's request, the answer STORED and the value, and `hsd sql` showing
  the row;
- docs/memcached.md's container example (the `toml` block of
  "Containers"): `hsd check` with it, over its table made on the embedded
  store, reads its one container.

Ports: the README's 9998/9999 come from HSD_PORT/HSD_PORT_WR (free ports;
the command lines stay as written); its 127.0.0.1:11211 becomes a free
port. Any drift between the text and what hsd does fails the run.
Usage: HSD_BIN=target/debug/hsd scripts/readme-check.py
"""

import doctest
import os
import re
import shlex
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HSD = os.path.abspath(os.environ.get("HSD_BIN", os.path.join(ROOT, "target/debug/hsd")))


def fail(why):
    print(f"readme-check: {why}", file=sys.stderr)
    sys.exit(1)


def section(text, title):
    """The text of the README's `## title` section."""
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    if not m:
        fail(f"README has no section {title!r}")
    return m.group(1)


def indented_blocks(body):
    """The indented (4 spaces) code blocks of a section, as lists of lines."""
    blocks, current = [], []
    for line in body.split("\n"):
        if line.startswith("    "):
            current.append(line[4:])
        elif line.strip() == "" and current:
            current.append("")
        else:
            if current:
                blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return [[l for l in b if l != ""] for b in blocks]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def as_run(command):
    """A README command line with the binary it stands for."""
    for written in ("cargo run --release -p hsd --", "target/release/hsd"):
        if command.startswith(written):
            return [HSD] + shlex.split(command[len(written):])
    fail(f"a command the check does not know how to run: {command}")


def serve(argv, cwd, env):
    """Starts hsd and waits for its ready line; returns the process."""
    p = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    for line in p.stdout:
        if line.startswith("hsd: listening "):
            return p
        if time.time() > deadline:
            break
    p.kill()
    fail(f"{shlex.join(argv)} printed no ready line")


def exchange(port, request, until):
    """Sends `request` and reads until the answer ends with `until`."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        got = b""
        while not got.endswith(until):
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        return got


def main():
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    env = dict(os.environ)
    port, port_wr = free_port(), free_port()
    env["HSD_PORT"], env["HSD_PORT_WR"] = str(port), str(port_wr)
    env.pop("HSD_DATA_DIR", None)
    with tempfile.TemporaryDirectory() as cwd:
        # Two commands: the first one, serving the demo table.
        first = indented_blocks(section(readme, "Two commands"))[0][0]
        demo = serve(as_run(first), cwd, env)
        try:
            try_it = section(readme, "Try it")
            blocks = indented_blocks(try_it)
            session = blocks[0]
            if not session[0].startswith("$ nc -C 127.0.0.1 9998"):
                fail(f"the Try it session starts otherwise: {session[0]}")
            lines = session[1:]
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                f = s.makefile("rb")
                for request, answer in zip(lines[0::2], lines[1::2]):
                    s.sendall(request.encode() + b"\r\n")
                    got = f.readline().decode().rstrip("\n")
                    if got != answer:
                        fail(f"Try it: {request!r} answered {got!r}, the README says {answer!r}")
            print(f"readme-check: Try it, nc: {len(lines) // 2} requests answered as written")
            py = re.search(r"```python\n(.*?)```", try_it, re.S)
            if not py:
                fail("Try it has no python session")
            sys.path.insert(0, os.path.join(ROOT, "clients/python/src"))
            text = py.group(1).replace("9998", str(port))
            test = doctest.DocTestParser().get_doctest(text, {}, "README Try it", "README.md", 0)
            runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
            runner.run(test)
            if runner.failures or not runner.tries:
                fail(f"Try it, python: {runner.failures} of {runner.tries} examples failed")
            print(f"readme-check: Try it, python: {runner.tries} examples answered as written")
            for command in blocks[-1]:
                r = subprocess.run(as_run(command), cwd=cwd, env=env, capture_output=True, text=True)
                if r.returncode != 0:
                    fail(f"{command}: exit {r.returncode}: {r.stderr}")
            print(f"readme-check: Try it, sql: {len(blocks[-1])} commands ran")
        finally:
            demo.kill()
            demo.wait()

    with tempfile.TemporaryDirectory() as cwd:
        door = section(readme, "The memcached door")
        commands = indented_blocks(door)[0]
        mc_port = free_port()
        hsd_server = None
        try:
            for command in commands:
                command = command.replace("127.0.0.1:11211", f"127.0.0.1:{mc_port}")
                if command.startswith("printf "):
                    subprocess.run(["bash", "-c", command], cwd=cwd, check=True)
                elif " serve " in command:
                    hsd_server = serve(as_run(command), cwd, env)
                else:
                    r = subprocess.run(as_run(command), cwd=cwd, env=env, capture_output=True, text=True)
                    if r.returncode != 0:
                        fail(f"{command}: exit {r.returncode}: {r.stderr}")
            if hsd_server is None:
                fail("the memcached door's commands start no server")
            m = re.search(r"`printf '([^']*)' \| nc -q1 127\.0\.0\.1 11211`", door)
            if not m:
                fail("the memcached door has no printf | nc line")
            request = m.group(1).encode().decode("unicode_escape").encode()
            got = exchange(mc_port, request, b"END\r\n")
            want = b"STORED\r\nVALUE greeting 0 5\r\nhello\r\nEND\r\n"
            if got != want:
                fail(f"the memcached door answered {got!r}, not {want!r}")
            sql = re.search(r'`(hsd sql test "SELECT \* FROM kv")`', door)
            if not sql:
                fail("the memcached door shows no hsd sql line")
            r = subprocess.run(
                [HSD] + shlex.split(sql.group(1))[1:], cwd=cwd, env=env, capture_output=True, text=True
            )
            if r.returncode != 0 or "greeting" not in r.stdout or "hello" not in r.stdout:
                fail(f"hsd sql did not show the row: {r.stdout}{r.stderr}")
            print("readme-check: the memcached door: STORED, the value, and the row in SQL")
        finally:
            if hsd_server is not None:
                hsd_server.kill()
                hsd_server.wait()
    memcached_doc_example(env)


def memcached_doc_example(env):
    """docs/memcached.md's container example, as `hsd check` reads it."""
    doc = open(os.path.join(ROOT, "docs/memcached.md"), encoding="utf-8").read()
    body = section(doc, "Configuration")
    m = re.search(r"```toml\n(.*?)```", body, re.S)
    if not m:
        fail("docs/memcached.md's Containers has no toml example")
    example = "\n".join(l.strip() for l in m.group(1).split("\n"))
    table = re.search(r'db_table = "([a-z_]+)"', example)
    schema = re.search(r'db_schema = "([a-z_]+)"', example)
    if not (table and schema):
        fail("the container example names no db_schema or db_table")
    with tempfile.TemporaryDirectory() as cwd:
        r = subprocess.run(
            [HSD, "sql", schema.group(1),
             f"CREATE TABLE {table.group(1)} (c1 TEXT PRIMARY KEY, c2 TEXT, c3 INTEGER, c4 INTEGER, c5 INTEGER)"],
            cwd=cwd, env=env, capture_output=True, text=True,
        )
        if r.returncode != 0:
            fail(f"making the example's table: {r.stderr}")
        with open(os.path.join(cwd, "hsd.toml"), "w") as f:
            f.write(example)
        os.chmod(os.path.join(cwd, "hsd.toml"), 0o600)
        r = subprocess.run(
            [HSD, "check", "--config", "hsd.toml", "--memcached-address", "127.0.0.1:0"],
            cwd=cwd, env=env, capture_output=True, text=True,
        )
        if "ok: --memcached-address: 1 container read (default)" not in r.stdout:
            fail(f"hsd check with docs/memcached.md's example: {r.stdout}{r.stderr}")
    print("readme-check: docs/memcached.md's container example: hsd check reads its container")


if __name__ == "__main__":
    main()
