'use strict';
// Where the hsd under test listens (environment set by compat/run.sh) and
// promise wrappers around node-handlersocket's callback API. The wrappers
// only adapt callbacks to promises: every request goes through the library's
// own functions, called with the same arguments an application would use.

const hs = require('node-handlersocket');

const env = (name, dflt) => {
  const v = process.env[name];
  return v === undefined || v === '' ? dflt : v;
};

const cfg = {
  host: env('HSD_COMPAT_HOST', '127.0.0.1'),
  port: Number(env('HSD_COMPAT_PORT', '9998')),
  portWr: Number(env('HSD_COMPAT_PORT_WR', '9999')),
  authPort: Number(env('HSD_COMPAT_AUTH_PORT', '0')),
  authPortWr: Number(env('HSD_COMPAT_AUTH_PORT_WR', '0')),
  secret: env('HSD_COMPAT_SECRET', ''),
  secretWr: env('HSD_COMPAT_SECRET_WR', ''),
  db: env('HSD_COMPAT_DB', 'hscompat_node'),
  backend: env('HSD_COMPAT_BACKEND', 'sqlite'),
};

/** Connects; resolves with the Connection on 'connect', rejects on 'error'. */
function connect(port, auth) {
  return new Promise((resolve, reject) => {
    const options = { host: cfg.host, port };
    if (auth !== undefined) {
      options.auth = auth;
    }
    const con = hs.connect(options);
    const onError = (err) => reject(err);
    con.once('error', onError);
    con.once('connect', () => {
      con.removeListener('error', onError);
      // Keep an error listener so a late socket error fails a test, not the process.
      con.on('error', (err) => { con.lastError = err; });
      resolve(con);
    });
  });
}

const reader = () => connect(cfg.port);
const writer = () => connect(cfg.portWr);

function openIndex(con, table, index, columns, filterColumns) {
  return new Promise((resolve, reject) => {
    const cb = (err, idx) => (err ? reject(err) : resolve(idx));
    if (filterColumns === undefined) {
      con.openIndex(cfg.db, table, index, columns, cb);
    } else {
      con.openIndex(cfg.db, table, index, columns, filterColumns, cb);
    }
  });
}

/**
 * Calls an Index method (find, update, delete, increment, ...AndGet, insert)
 * with the given arguments plus a callback; resolves with its result.
 */
function call(index, method, ...args) {
  return new Promise((resolve, reject) => {
    index[method](...args, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

function close(con) {
  return new Promise((resolve) => {
    if (!con._socket) {
      resolve();
      return;
    }
    con.once('close', resolve);
    con.close();
  });
}

module.exports = { hs, cfg, connect, reader, writer, openIndex, call, close };
