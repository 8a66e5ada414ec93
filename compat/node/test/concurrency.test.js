'use strict';
// Many connections at once, each with many requests in flight (the library
// pipelines: it writes every request at once and matches responses in order).

const test = require('node:test');
const assert = require('node:assert/strict');
const { reader, writer, openIndex, call, close } = require('../lib/hsd');

const NAMES = ['SMITH', 'ALLEN', 'WARD', 'JONES', 'MARTIN', 'BLAKE', 'CLARK', 'SCOTT', 'KING', 'TURNER',
  'ADAMS', 'JAMES', 'FORD', 'MILLER'];

test('concurrent pipelined point lookups on 16 connections', async () => {
  const cons = await Promise.all(Array.from({ length: 16 }, () => reader()));
  try {
    await Promise.all(cons.map(async (con, c) => {
      const emp = await openIndex(con, 'emp', 'PRIMARY', ['id', 'ename']);
      const pending = [];
      for (let i = 0; i < 200; i++) {
        const id = 1 + ((c * 7 + i * 5) % 16); // 15 and 16 do not exist
        pending.push(call(emp, 'find', '=', [id]).then((rows) => {
          assert.deepEqual(rows, id <= 14 ? [[String(id), NAMES[id - 1]]] : [], `connection ${c} id ${id}`);
        }));
      }
      await Promise.all(pending);
    }));
  } finally {
    await Promise.all(cons.map(close));
  }
});

test('concurrent pipelined writers on 12 connections, read back on the read port', async () => {
  const ROWS = 40;
  const base = 500;  // workers 501.. : the Java tests use 1..16 and 990
  const wcons = await Promise.all(Array.from({ length: 12 }, () => writer()));
  const rcon = await reader();
  try {
    const rconc = await openIndex(rcon, 'conc', 'conc_worker', ['id', 'val']);
    await Promise.all(wcons.map(async (con, c) => {
      const worker = base + c + 1;
      const conc = await openIndex(con, 'conc', 'PRIMARY', ['id', 'worker', 'val']);
      const byWorker = await openIndex(con, 'conc', 'conc_worker', ['id', 'val']);
      const ids = Array.from({ length: ROWS }, (_, i) => worker * 100000 + i);
      await Promise.all(ids.map((id, i) => call(conc, 'insert', [id, worker, 'v' + i])));
      const counts = await Promise.all(ids.map((id, i) => call(conc, 'update', '=', [id], [id, worker, 'u' + i])));
      assert.deepEqual(counts, ids.map(() => 1));
      // Writes are answered once committed: the read port sees them all.
      const rows = await call(rconc, 'find', '=', [worker], { limit: 1000 });
      assert.deepEqual(rows, ids.map((id, i) => [String(id), 'u' + i]), `worker ${worker}`);
      const deleted = await Promise.all(ids.filter((_, i) => i % 2 === 0).map((id) => call(conc, 'delete', '=', [id])));
      assert.deepEqual(deleted, deleted.map(() => 1));
      const left = await call(byWorker, 'find', '=', [worker], { limit: 1000 });
      assert.equal(left.length, ROWS / 2, `worker ${worker}`);
    }));
  } finally {
    await Promise.all(wcons.map(close));
    await close(rcon);
  }
});
