'use strict';
// Insert, update, delete, increment/decrement and their "...AndGet" forms
// through node-handlersocket on hsd's write port, with IN and filters. Each
// test owns the kv keys with its own prefix.

const test = require('node:test');
const assert = require('node:assert/strict');
const { hs, writer, openIndex, call, close } = require('../lib/hsd');

let con;
let kv;      // kv PRIMARY: k, v, n
let kvV;     // kv PRIMARY: v
let kvF;     // kv PRIMARY: v; filters on k, v, n
let seq;     // seq PRIMARY: name
let counter; // counter PRIMARY: hits, score

test.before(async () => {
  con = await writer();
  kv = await openIndex(con, 'kv', 'PRIMARY', ['k', 'v', 'n'], ['k']);
  kvV = await openIndex(con, 'kv', 'PRIMARY', ['v']);
  kvF = await openIndex(con, 'kv', 'PRIMARY', ['v'], ['k', 'v', 'n']);
  seq = await openIndex(con, 'seq', 'PRIMARY', ['name']);
  counter = await openIndex(con, 'counter', 'PRIMARY', ['hits', 'score']);
});

test.after(async () => {
  await close(con);
});

const get = async (k) => call(kv, 'find', '=', [k]);
const from = async (k, limit) => call(kv, 'find', '>=', [k], { limit });
const insertAll = async (rows) => {
  for (const r of rows) {
    await call(kv, 'insert', r);
  }
};

test('insert then find', async () => {
  await call(kv, 'insert', ['ins1', 'hello', 1]);
  assert.deepEqual(await get('ins1'), [['ins1', 'hello', '1']]);
});

test('insert answers the auto-increment id', async () => {
  const a = await call(seq, 'insert', ['first']);
  const b = await call(seq, 'insert', ['second']);
  assert.ok(Number.isInteger(a) && a > 0, `id ${a}`);
  assert.equal(b, a + 1);
  assert.deepEqual(await call(seq, 'find', '=', [a]), [['first']]);
  assert.deepEqual(await call(seq, 'find', '=', [b]), [['second']]);
});

test('insert of a duplicate key is error 121', async () => {
  await call(kv, 'insert', ['dup1', 'a', 1]);
  await assert.rejects(call(kv, 'insert', ['dup1', 'b', 2]), { message: '1 121' });
  assert.deepEqual(await get('dup1'), [['dup1', 'a', '1']]);
});

test('insert NULL, empty string, and fewer values than columns', async () => {
  await call(kv, 'insert', ['nul1', null, 5]);
  await call(kv, 'insert', ['nul2', '', 6]);
  await call(kv, 'insert', ['nul3']);
  // Columns not given whose default is NULL get their type's zero value, as
  // the original stores them.
  assert.deepEqual(await from('nul1', 3), [['nul1', null, '5'], ['nul2', '', '6'], ['nul3', '', '0']]);
});

test('bytes that need escaping round-trip', async () => {
  const k = 'esc\tkey\n1';
  const v = 'tab\there|newline\nhere|cr\r|ctl\u0001\u0002\u000f|nul\u0000|del\u007f|utf8 \u00fc\u00e9 \u65e5\u672c';
  await call(kv, 'insert', [k, v, 7]);
  assert.deepEqual(await get(k), [[k, v, '7']]);
});

test('update and updateAndGet', async () => {
  await call(kv, 'insert', ['upd1', 'old', 1]);
  assert.equal(await call(kv, 'update', '=', ['upd1'], ['upd1', 'new', 2]), 1);
  assert.deepEqual(await get('upd1'), [['upd1', 'new', '2']]);
  // Same values again still count as modified.
  assert.equal(await call(kv, 'update', '=', ['upd1'], ['upd1', 'new', 2]), 1);
  assert.deepEqual(await call(kvV, 'updateAndGet', '=', ['upd1'], [null]), [['new']]);
  assert.deepEqual(await get('upd1'), [['upd1', null, '2']]);
  assert.equal(await call(kv, 'update', '=', ['upd-none'], ['x', 'y', 3]), 0);
  assert.deepEqual(await call(kv, 'updateAndGet', '=', ['upd-none'], ['x', 'y', 3]), []);
});

test('update a range with limit and offset; counts of ten and more', async () => {
  const rows = [];
  for (let i = 10; i < 22; i++) rows.push(['rng' + i, 'v', i]);
  await insertAll(rows);
  assert.equal(await call(kvV, 'update', '>=', ['rng10'], { limit: 12 }, ['all']), 12);
  assert.equal(await call(kvV, 'update', '>=', ['rng10'], { limit: 3, offset: 2 }, ['some']), 3);
  const got = (await from('rng10', 12)).map((r) => r[1]);
  assert.deepEqual(got, ['all', 'all', 'some', 'some', 'some', 'all', 'all', 'all', 'all', 'all', 'all', 'all']);
});

test('update with IN and with filters', async () => {
  await insertAll([['inu1', 'a', 1], ['inu2', 'b', 2], ['inu3', 'c', 3], ['inu4', 'd', 4]]);
  assert.equal(await call(kvV, 'update', '=', [hs.in('inu1', 'inu3', 'inu9')], { limit: 10 }, ['IN']), 2);
  assert.equal(await call(kvF, 'update', '>=', ['inu1'],
    { filters: [hs.filter('n', '>=', 3), hs.while('k', '<=', 'inu4')], limit: 10 }, ['F']), 2);
  assert.equal(await call(kvF, 'update', '=', [hs.in('inu1', 'inu2', 'inu3', 'inu4')],
    { filters: [hs.filter('v', '=', 'IN')], limit: 10 }, ['both']), 1);
  assert.deepEqual(await from('inu1', 4),
    [['inu1', 'both', '1'], ['inu2', 'b', '2'], ['inu3', 'F', '3'], ['inu4', 'F', '4']]);
});

test('delete, deleteAndGet, with limit/offset, IN and filters', async () => {
  await call(kv, 'insert', ['del1', 'x', 1]);
  assert.equal(await call(kv, 'delete', '=', ['del1']), 1);
  assert.deepEqual(await get('del1'), []);
  assert.equal(await call(kv, 'delete', '=', ['del1']), 0);

  await insertAll([0, 1, 2, 3, 4, 5, 6, 7].map((i) => ['delr' + i, 'v' + i, i]));
  assert.deepEqual(await call(kv, 'deleteAndGet', '=', ['delr0']), [['delr0', 'v0', '0']]);
  assert.equal(await call(kv, 'delete', '>=', ['delr1'], { limit: 2, offset: 1 }), 2);        // delr2, delr3
  assert.equal(await call(kv, 'delete', '=', [hs.in('delr4', 'delr9', 'delr1')], { limit: 10 }), 2);
  assert.deepEqual(await call(kvF, 'deleteAndGet', '>=', ['delr5'],
    { filters: [hs.filter('n', '!=', 6), hs.while('k', '<=', 'delr7')], limit: 10 }), [['v5'], ['v7']]);
  assert.deepEqual(await call(kv, 'find', '>=', ['delr0'], { limit: 10, filters: [hs.while('k', '<=', 'delr9')] }),
    [['delr6', 'v6', '6']]);
});

test('increment and decrement, with ...AndGet', async () => {
  // counter: (1, 0, 0), (2, 10, 5), (3, NULL, 7)
  assert.equal(await call(counter, 'increment', '=', [1], [1, 5]), 1);
  assert.deepEqual(await call(counter, 'find', '=', [1]), [['1', '5']]);
  assert.equal(await call(counter, 'decrement', '=', [1], [1, 2]), 1);
  assert.deepEqual(await call(counter, 'find', '=', [1]), [['0', '3']]);
  assert.deepEqual(await call(counter, 'incrementAndGet', '=', [1], [10, 0]), [['0', '3']]);
  assert.deepEqual(await call(counter, 'decrementAndGet', '=', [1], [3, 1]), [['10', '3']]);
  assert.deepEqual(await call(counter, 'find', '=', [1]), [['7', '2']]);
  // A NULL column is left alone; the others change.
  assert.equal(await call(counter, 'increment', '=', [3], [1, 1]), 1);
  assert.deepEqual(await call(counter, 'find', '=', [3]), [[null, '8']]);
  // Quirk: a decrement that would turn a positive value negative leaves the
  // whole row alone and does not count it.
  assert.equal(await call(counter, 'decrement', '=', [2], [1, 6]), 0);
  assert.deepEqual(await call(counter, 'find', '=', [2]), [['10', '5']]);
  // Over a range and with IN.
  assert.equal(await call(counter, 'increment', '>=', [1], { limit: 10 }, [100, 100]), 3);
  assert.deepEqual(await call(counter, 'find', '>=', [1], { limit: 10 }),
    [['107', '102'], ['110', '105'], [null, '108']]);
  assert.equal(await call(counter, 'decrement', '=', [hs.in(3, 1)], { limit: 10 }, [7, 8]), 2);
  assert.deepEqual(await call(counter, 'find', '>=', [1], { limit: 10 }),
    [['100', '94'], ['110', '105'], [null, '100']]);
});
