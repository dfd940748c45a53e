'use strict';
// sqllock for Node.js: distributed locks on the SQL database you already
// run, over libsqllock. See README.md.
const native = require('./native');
const { Database } = require('./db');
const { Lease, LeaseSet } = require('./lease');
const { Campaign } = require('./leader');
const { LeaseInfo, Reaper } = require('./reaper');
const { SqllockError, AbortError, codes, fromNative } = require('./errors');

/** const db = await sqllock.open(url, { init, maxConnections,
 * connectTimeout, statementTimeout, busyTimeout }) */
function open(url, options) {
  return Database._open(url, options);
}

/** A campaign on a database handle of its own, closed with it. */
async function campaign(url, name, options = {}) {
  const db = await open(url, { maxConnections: 1, init: options.init,
    connectTimeout: options.connectTimeout, statementTimeout: options.statementTimeout });
  try {
    const c = await db.campaign(name, options);
    const close = c.close.bind(c);
    c.close = async () => { try { await close(); } finally { await db.close(); } };
    return c;
  } catch (e) {
    await db.close();
    throw e;
  }
}

/** const reaper = await sqllock.startReaper(url, { every, grace, batch,
 * connectTimeout, statementTimeout }): a Reaper (contract P1-P3) on a
 * connection of its own; stop it with `await reaper.stop()`. */
function startReaper(url, options) {
  return Reaper._start(url, options);
}

module.exports = {
  open,
  campaign,
  startReaper,
  Database,
  Reaper,
  LeaseInfo,
  Lease,
  LeaseSet,
  Campaign,
  SqllockError,
  AbortError,
  codes,
  /** The clock of local deadlines (CLOCK_BOOTTIME/MONOTONIC), in µs. */
  nowUs: native.nowUs,
  /** '1m30s' -> 90000 (sqllock_parse_duration()). */
  parseDuration(text) {
    try {
      return native.parseDuration(text);
    } catch (e) {
      throw fromNative(e);
    }
  },
  version: native.version(),
  /** The longest C wait of a cancellable acquire: how long an abort may
   * take to be seen. */
  SLICE_MS: native.SLICE_MS,
};
