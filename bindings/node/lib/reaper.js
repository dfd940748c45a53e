'use strict';
// The lease table seen from outside: its rows (LeaseInfo, as db.list()
// and db.forceRelease() report them) and the reaper thread (contract
// P1-P4), as the Python binding's LeaseInfo and Reaper
// (bindings/python/sqllock/_db.py, _reaper.py).
const native = require('./native');
const cv = require('./convert');
const { SqllockError, fromNative, invalid, codes } = require('./errors');

const ops = native.ops;

/** One row of the lease table (sqllock_lease_info). Times by the
 * database server's clock; `remaining` in ms, <= 0 for a lease that
 * expired but whose row was not yet taken over or reaped. A primitive's
 * rows keep the library's names: BASE + '\x1f' + tag ('jobs\x1fw', a
 * shared lock's writer; 'jobs\x1fp0', a semaphore's permit). */
class LeaseInfo {
  constructor([name, owner, holder, token, acquiredMs, expiresMs, remaining]) {
    this.name = name;
    this.owner = owner;
    this.holder = holder;
    /** The fencing token, exact. */
    this.tokenBigInt = token;
    this.acquiredAt = new Date(acquiredMs);
    this.expiresAt = new Date(expiresMs);
    this.remaining = remaining;
  }

  /** The fencing token as a Number (RangeError past 2^53, as lease.token). */
  get token() { return cv.tokenNumber(this.tokenBigInt); }

  // JSON has no bigint: the token as a Number, or a string past 2^53.
  toJSON() {
    const t = this.tokenBigInt;
    return { name: this.name, owner: this.owner, holder: this.holder,
      token: t > BigInt(Number.MAX_SAFE_INTEGER) ? String(t) : Number(t),
      acquiredAt: this.acquiredAt, expiresAt: this.expiresAt, remaining: this.remaining };
  }
}

// A grace time: a duration, not Infinity (the library's bound is years).
function graceMs(value) {
  const g = cv.ms(value, 'grace', 0);
  if (g === Infinity) throw invalid('grace must be a finite duration');
  return g;
}

function integer(value, what) {
  if (!Number.isInteger(value)) {
    throw new TypeError(`${what} must be an integer, not ${value === null ? 'null' : String(value)}`);
  }
  return value;
}

// Runs one blocking job (a connect, a stop) on a conn -- a thread -- of
// its own, never on the loop, and ends that thread after it.
async function onThread(op, ...args) {
  const conn = native.connNew(() => {});
  try {
    return await native.call(conn, op, ...args);
  } catch (e) {
    throw fromNative(e);
  } finally {
    native.call(conn, ops.CLOSE).catch(() => {});
  }
}

/** A thread of the C library, with its own connection, that deletes
 * lease rows expired more than `grace` ago: a pass at once, then every
 * `every`, `batch` rows per statement. Errors of a pass are counted in
 * stats(), not thrown. It does not keep the process alive (as an
 * unref'd timer), and it runs until stop() or the process's end --
 * dropping the object does not stop it. Use sqllock.startReaper(). */
class Reaper {
  #ext; #stopping = null;

  constructor(ext, secret) {
    if (secret !== Reaper.#token) throw new TypeError('use sqllock.startReaper(url, options)');
    this.#ext = ext;
  }

  static #token = Symbol('reaper');

  static async _start(url, options = {}) {
    if (typeof url !== 'string') throw new TypeError(`url must be a string, not ${url === null ? 'null' : typeof url}`);
    if (options === null || typeof options !== 'object') throw new TypeError('options must be an object');
    const every = cv.ms(options.every, 'every', 0);       // 0: the library's 60 s
    if (options.every !== undefined && !(every > 0 && every !== Infinity)) {
      throw invalid(`every must be a positive duration, not ${String(options.every)}`);
    }
    const batch = options.batch === undefined ? 0 : integer(options.batch, 'batch');
    const ext = native.reaperNew();
    await onThread(ops.REAPER_START, ext, url, every, graceMs(options.grace), batch,
      cv.ms(options.connectTimeout, 'connectTimeout', 0),
      cv.ms(options.statementTimeout, 'statementTimeout', 0));
    return new Reaper(ext, Reaper.#token);
  }

  /** True until stop() is called. */
  get running() { return this.#stopping === null; }

  /** The counters, copied at one moment: { reaped (rows deleted),
   * passes (failed ones included), errors (failed passes), lastStatus
   * (0 after a success), lastError ('' after a success) }. Throws
   * 'EMISUSE' once stop() was called. */
  stats() {
    const s = this.#stopping === null ? native.reaperStats(this.#ext) : null;
    if (s === null) throw new SqllockError(codes.EMISUSE, 'the reaper was stopped');
    return s;
  }

  /** Wakes the thread and waits for it to end (within one statement,
   * P3), off the event loop; calling it again returns the same promise. */
  stop() {
    if (this.#stopping === null) this.#stopping = onThread(ops.REAPER_STOP, this.#ext);
    return this.#stopping;
  }

  async [Symbol.asyncDispose]() { await this.stop(); }
}

module.exports = { LeaseInfo, Reaper, graceMs, integer };
