'use strict';
// What every test file shares: the database (one URL, $SQLLOCK_TEST_URL,
// else a temporary SQLite file of this process), names of its own, and
// waits on state with a deadline (never a fixed sleep as an assertion).
const fs = require('fs');
const os = require('os');
const path = require('path');
const sqllock = require(path.join(__dirname, '..', 'lib'));

let tmpdir = null;

function url() {
  if (process.env.SQLLOCK_TEST_URL) return process.env.SQLLOCK_TEST_URL;
  if (tmpdir === null) {
    tmpdir = fs.mkdtempSync(path.join(os.tmpdir(), 'sqllock-node-'));
    process.on('exit', () => fs.rmSync(tmpdir, { recursive: true, force: true }));
  }
  return `sqlite://${path.join(tmpdir, 't.db')}`;
}

function driver() {
  const u = url();
  if (u.startsWith('sqlite:')) return 'sqlite';
  if (u.startsWith('postgres')) return 'postgres';
  return 'mysql';
}

// A loaded 2-core machine: every timing bound is multiplied by this.
const SCALE = Number(process.env.SQLLOCK_TEST_SCALE || 1);

let seq = 0;
function uniq(what) {
  return `node-${what}-${process.pid}-${++seq}-${Math.random().toString(36).slice(2, 8)}`;
}

// Opens the test database; the first open of a process creates the
// schema (init is idempotent, and safe from several processes at once).
async function openDb(opts = {}) {
  return sqllock.open(url(), { init: true, ...opts });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Polls fn() until it returns a truthy value, or fails after timeoutMs.
async function waitFor(fn, timeoutMs, what) {
  const end = Date.now() + timeoutMs * SCALE;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs * SCALE} ms waiting for ${what}`);
    await sleep(20);
  }
}

// The placeholder of argument i (1-based) in the library's own SQL.
function ph(i) { return driver() === 'postgres' ? `$${i}` : '?'; }

module.exports = { sqllock, url, driver, SCALE, uniq, openDb, sleep, waitFor, ph };
