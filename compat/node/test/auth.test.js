'use strict';
// node-handlersocket's `auth` option against an hsd started with
// --plain-secret / --plain-secret-wr (compat/run.sh starts one).

const test = require('node:test');
const assert = require('node:assert/strict');
const { cfg, connect, openIndex, call, close } = require('../lib/hsd');

const skip = !(cfg.authPort && cfg.authPortWr)
  && 'no hsd with secrets (set HSD_COMPAT_AUTH_PORT, HSD_COMPAT_AUTH_PORT_WR, HSD_COMPAT_SECRET, HSD_COMPAT_SECRET_WR)';

test('read port: the right secret opens and finds', { skip }, async () => {
  const con = await connect(cfg.authPort, cfg.secret);
  try {
    const emp = await openIndex(con, 'emp', 'PRIMARY', ['ename']);
    assert.deepEqual(await call(emp, 'find', '=', [9]), [['KING']]);
    const kv = await openIndex(con, 'kv', 'PRIMARY', ['k', 'v']);
    await assert.rejects(call(kv, 'insert', ['auth-ro', 'x']), { message: '2 readonly' });
  } finally {
    await close(con);
  }
});

test('write port: the right secret writes', { skip }, async () => {
  const con = await connect(cfg.authPortWr, cfg.secretWr);
  try {
    const kv = await openIndex(con, 'kv', 'PRIMARY', ['k', 'v']);
    await call(kv, 'insert', ['auth1', 'written']);
    assert.deepEqual(await call(kv, 'find', '=', ['auth1']), [['auth1', 'written']]);
    assert.equal(await call(kv, 'update', '=', ['auth1'], ['auth1', 'again']), 1);
    assert.equal(await call(kv, 'delete', '=', ['auth1']), 1);
  } finally {
    await close(con);
  }
});

test('no secret: every request answers unauth, on both ports', { skip }, async () => {
  for (const port of [cfg.authPort, cfg.authPortWr]) {
    const con = await connect(port);
    try {
      await assert.rejects(openIndex(con, 'emp', 'PRIMARY', ['ename']), { message: '3 unauth' });
      await assert.rejects(openIndex(con, 'emp', 'PRIMARY', ['ename']), { message: '3 unauth' });
    } finally {
      await close(con);
    }
  }
});

test('a wrong secret, or the other port\'s secret, fails the connect', { skip }, async () => {
  const cases = [[cfg.authPort, 'wrong-' + cfg.secret], [cfg.authPortWr, 'wrong-' + cfg.secretWr]];
  if (cfg.secret !== cfg.secretWr) {
    cases.push([cfg.authPort, cfg.secretWr], [cfg.authPortWr, cfg.secret]);
  }
  for (const [port, secret] of cases) {
    await assert.rejects(connect(port, secret), { message: '3 unauth' }, `port ${port}`);
  }
});
