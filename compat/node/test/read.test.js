'use strict';
// Finds through node-handlersocket on hsd's read port: every operator,
// limit/offset, IN, F and W filters, NULL and errors.

const test = require('node:test');
const assert = require('node:assert/strict');
const { hs, reader, openIndex, call, close } = require('../lib/hsd');

let con;
let emp;       // PRIMARY: id, ename; filters on empno, ename, sal, dept, note
let bySal;     // emp_dept_sal: id, ename
let notes;     // PRIMARY: ename, note

test.before(async () => {
  con = await reader();
  emp = await openIndex(con, 'emp', 'PRIMARY', ['id', 'ename'], ['empno', 'ename', 'sal', 'dept', 'note']);
  bySal = await openIndex(con, 'emp', 'emp_dept_sal', ['id', 'ename']);
  notes = await openIndex(con, 'emp', 'PRIMARY', ['ename', 'note']);
});

test.after(async () => {
  await close(con);
});

const ids = (rows) => rows.map((r) => r[0]);

test('find = on the primary key, default limit 1', async () => {
  assert.deepEqual(await call(emp, 'find', '=', [7]), [['7', 'CLARK']]);
  assert.deepEqual(await call(emp, 'find', '=', 7), [['7', 'CLARK']]);
  assert.deepEqual(await call(emp, 'find', '>=', [7]), [['7', 'CLARK']]);
  assert.deepEqual(await call(emp, 'find', '=', [99]), []);
});

test('every operator with a limit', async () => {
  const lim = { limit: 10 };
  assert.deepEqual(ids(await call(emp, 'find', '=', [3], lim)), ['3']);
  assert.deepEqual(ids(await call(emp, 'find', '>', [12], lim)), ['13', '14']);
  assert.deepEqual(ids(await call(emp, 'find', '>=', [12], lim)), ['12', '13', '14']);
  assert.deepEqual(ids(await call(emp, 'find', '<', [3], lim)), ['2', '1']);
  assert.deepEqual(ids(await call(emp, 'find', '<=', [3], lim)), ['3', '2', '1']);
  assert.deepEqual(ids(await call(emp, 'find', '<', [1], lim)), []);
});

test('limit and offset', async () => {
  assert.deepEqual(ids(await call(emp, 'find', '>=', [1], { limit: 3, offset: 2 })), ['3', '4', '5']);
  assert.deepEqual(ids(await call(emp, 'find', '<=', [14], { limit: 2, offset: 1 })), ['13', '12']);
  assert.deepEqual(ids(await call(emp, 'find', '>=', [1], { limit: 5, offset: 13 })), ['14']);
  assert.deepEqual(ids(await call(emp, 'find', '>=', [1], { limit: 5, offset: 14 })), []);
});

test('composite index with one and two key columns', async () => {
  assert.deepEqual(await call(bySal, 'find', '=', [30], { limit: 10 }),
    [['12', 'JAMES'], ['3', 'WARD'], ['5', 'MARTIN'], ['10', 'TURNER'], ['2', 'ALLEN'], ['6', 'BLAKE']]);
  assert.deepEqual(ids(await call(bySal, 'find', '=', [20, 3000], { limit: 10 })), ['8', '13']);
  assert.deepEqual(ids(await call(bySal, 'find', '>=', [20, 3000], { limit: 4 })), ['8', '13', '12', '3']);
  assert.deepEqual(ids(await call(bySal, 'find', '<=', [20, 1100], { limit: 10 })), ['11', '1', '9', '7', '14']);
  assert.deepEqual(ids(await call(bySal, 'find', '<', [20], { limit: 3 })), ['9', '7', '14']);
});

test('NULL and the empty string stay different', async () => {
  assert.deepEqual(await call(notes, 'find', '=', [1]), [['SMITH', null]]);
  assert.deepEqual(await call(notes, 'find', '=', [8]), [['SCOTT', '']]);
  assert.deepEqual(await call(notes, 'find', '=', [9]), [['KING', 'boss']]);
});

test('IN on the primary key: one row per value, in the order given', async () => {
  assert.deepEqual(ids(await call(emp, 'find', '=', [hs.in(1, 2, 3)], { limit: 10 })), ['1', '2', '3']);
  // The IN criterion alone as the key, as in the library's README.
  assert.deepEqual(ids(await call(emp, 'find', '=', hs.in(3, 1, 99, 2), { limit: 10 })), ['3', '1', '2']);
  // limit and offset apply across all values together.
  assert.deepEqual(ids(await call(emp, 'find', '=', [hs.in(5, 6, 7, 8)], { limit: 2, offset: 1 })), ['6', '7']);
  // Default limit 1.
  assert.deepEqual(ids(await call(emp, 'find', '=', [hs.in(5, 6, 7)])), ['5']);
});

test('IN on a composite index: a second-column IN, and other operators', async () => {
  // HandlerSocket takes at most the one row each seek lands on.
  assert.deepEqual(ids(await call(bySal, 'find', '=', [30, hs.in(1250, 950, 1600, 1)], { limit: 10 })),
    ['3', '12', '2']);
  assert.deepEqual(ids(await call(bySal, 'find', '=', [hs.in(20, 10, 40)], { limit: 10 })), ['1', '14']);
  assert.deepEqual(ids(await call(bySal, 'find', '>=', [hs.in(25, 10)], { limit: 10 })), ['12', '14']);
  assert.deepEqual(ids(await call(bySal, 'find', '<', [hs.in(20, 30)], { limit: 10 })), ['9', '13']);
});

test('F filters', async () => {
  // The library's own README/test example.
  assert.deepEqual(await call(emp, 'find', '<=', 10, { filters: hs.filter('empno', '>', 7800), limit: 10 }),
    [['10', 'TURNER'], ['9', 'KING']]);
  assert.deepEqual(ids(await call(emp, 'find', '>=', [1], { filters: [hs.filter('dept', '=', 10)], limit: 10 })),
    ['7', '9', '14']);
  assert.deepEqual(ids(await call(emp, 'find', '>=', [1], { filters: [hs.filter('sal', '>=', 3000)], limit: 10 })),
    ['8', '9', '13']);
  assert.deepEqual(ids(await call(emp, 'find', '>=', [1], { filters: [hs.filter('sal', '<', 1000)], limit: 10 })),
    ['1', '12']);
  assert.deepEqual(ids(await call(emp, 'find', '>=', [1],
    { filters: [hs.filter('dept', '!=', 30), hs.filter('sal', '<=', 1300)], limit: 10 })), ['1', '11', '14']);
  // Filter columns by position in the opened filter columns.
  assert.deepEqual(ids(await call(emp, 'find', '>=', [1], { filters: [hs.filter(3, '=', 10)], limit: 10 })),
    ['7', '9', '14']);
  // Limit and offset count only the rows that pass.
  assert.deepEqual(ids(await call(emp, 'find', '>=', [1],
    { filters: [hs.filter('dept', '=', 30)], limit: 2, offset: 1 })), ['3', '5']);
});

test('F filters on NULL and on text', async () => {
  // NULL equals NULL and is lower than any value.
  assert.deepEqual(ids(await call(emp, 'find', '>=', [1], { filters: [hs.filter('note', '=', null)], limit: 20 })),
    ['1', '4', '6', '7', '11', '12', '13', '14']);
  assert.deepEqual(ids(await call(emp, 'find', '>=', [1], { filters: [hs.filter('note', '>', null)], limit: 20 })),
    ['2', '3', '5', '8', '9', '10']);
  assert.deepEqual(ids(await call(emp, 'find', '>=', [1], { filters: [hs.filter('note', '=', '')], limit: 20 })),
    ['8']);
  assert.deepEqual(ids(await call(emp, 'find', '>=', [1], { filters: [hs.filter('ename', '=', 'KING')], limit: 20 })),
    ['9']);
});

test('W filters end the scan', async () => {
  // The library's own test: W on empno and F on ename together.
  assert.deepEqual(await call(emp, 'find', '>=', 10, {
    filters: [hs.while('empno', '<=', 7900), hs.filter('ename', '>', 'ADAMS')],
    limit: 10,
  }), [['10', 'TURNER'], ['12', 'JAMES']]);
  assert.deepEqual(ids(await call(emp, 'find', '>=', [1], { filters: [hs.while('sal', '<', 2000)], limit: 10 })),
    ['1', '2', '3']);
  assert.deepEqual(ids(await call(emp, 'find', '>=', [1], { filters: [hs.while('sal', '>', 5000)], limit: 10 })), []);
});

test('IN and filters together', async () => {
  assert.deepEqual(ids(await call(emp, 'find', '=', [hs.in(1, 2, 3, 4, 5)],
    { filters: [hs.filter('dept', '=', 30)], limit: 10 })), ['2', '3', '5']);
  assert.deepEqual(ids(await call(emp, 'find', '=', [hs.in(1, 2, 3, 4, 5)],
    { filters: [hs.while('dept', '=', 20)], limit: 10 })), ['1']);
});

test('an unknown filter operator: one byte, or two ending in =, is false; others are true', async () => {
  assert.deepEqual(await call(emp, 'find', '>=', [1], { filters: [hs.filter('sal', '~', 1000)], limit: 10 }), []);
  assert.deepEqual(await call(emp, 'find', '>=', [1], { filters: [hs.filter('sal', '~=', 1000)], limit: 10 }), []);
  assert.equal((await call(emp, 'find', '>=', [1], { filters: [hs.filter('sal', '<>', 1000)], limit: 10 })).length, 10);
});

test('a filter on a column that was not opened for filters is refused by the client', async () => {
  await assert.rejects(call(emp, 'find', '>=', [1], { filters: [hs.filter('id', '=', 1)], limit: 10 }),
    /invalid column: id/);
});

test('error responses', async () => {
  await assert.rejects(openIndex(con, 'no_such_table', 'PRIMARY', ['id']), { message: '1 open_table' });
  await assert.rejects(openIndex(con, 'emp', 'no_such_index', ['id']), { message: '2 idxnum' });
  await assert.rejects(openIndex(con, 'emp', 'PRIMARY', ['id', 'no_such_column']), { message: '2 fld' });
  await assert.rejects(openIndex(con, 'emp', 'PRIMARY', ['id'], ['no_such_column']), { message: '2 fld' });
  await assert.rejects(call(emp, 'find', '=', [1, 2]), { message: '2 kpnum' });
  await assert.rejects(call(emp, 'find', '~', [1]), { message: '2 op' });
  await assert.rejects(call(emp, 'find', '>=', [1], { filters: [hs.filter(9, '=', 1)] }), { message: '2 filterfld' });
  // The connection is still usable.
  assert.deepEqual(await call(emp, 'find', '=', [9]), [['9', 'KING']]);
});

test('writes are refused on the read port', async () => {
  const kv = await openIndex(con, 'kv', 'PRIMARY', ['k', 'v']);
  await assert.rejects(call(kv, 'insert', ['ro', 'x']), { message: '2 readonly' });
  await assert.rejects(call(kv, 'update', '=', ['ro'], ['ro', 'y']), { message: '2 readonly' });
  await assert.rejects(call(kv, 'delete', '=', ['ro']), { message: '2 readonly' });
  await assert.rejects(call(kv, 'increment', '=', ['ro'], [1, 1]), { message: '2 readonly' });
});

test('pipelined requests are answered in order', async () => {
  const want = ['SMITH', 'ALLEN', 'WARD', 'JONES', 'MARTIN', 'BLAKE', 'CLARK', 'SCOTT', 'KING', 'TURNER',
    'ADAMS', 'JAMES', 'FORD', 'MILLER'];
  const all = [];
  for (let round = 0; round < 20; round++) {
    for (let id = 1; id <= 16; id++) {
      all.push(call(emp, 'find', '=', [id]).then((rows) => [id, rows]));
    }
  }
  for (const [id, rows] of await Promise.all(all)) {
    assert.deepEqual(rows, id <= 14 ? [[String(id), want[id - 1]]] : []);
  }
});
