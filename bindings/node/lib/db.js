'use strict';
// Database: a pool of connections to one database, as the Python
// binding's Database (bindings/python/sqllock/_db.py) is.
//
// Each connection is a sqllock_db of the C library with a thread of its
// own (the addon's conn: its calls run there in order, so a handle is
// used by one thread, contract E3). Short calls (a try, a release, the
// records, exec) run on the first connection. A wait -- an acquire that
// finds the lock held and may wait -- and a row-lock transaction take a
// connection of the pool to themselves, so that they hold up no other
// call; a hold that a wait acquired stays on that connection until it is
// released. The pool opens connections as needed, up to maxConnections
// (default 8, the first included); when every one is taken, a wait waits
// for one within its own deadline. Connection budget: maxConnections,
// plus one renewer connection for each of them that holds a watched
// lease: at most 2 x maxConnections.
const native = require('./native');
const cv = require('./convert');
const { SqllockError, abortError, fromNative, invalid, codes } = require('./errors');
const { Lease, LeaseSet, STYLES } = require('./lease');
const { LeaseInfo, graceMs, integer } = require('./reaper');

const ops = native.ops;
const KIND = { lease: 1, sem: 2, shared: 3, exclusive: 4, leader: 5 };

// One connection and its thread.
class Conn {
  constructor() {
    const self = new WeakRef(this);
    // The addon keeps this function; it must not keep the Conn alive, so
    // that a Database dropped without close() is closed when collected.
    this.ext = native.connNew((id, state, status, msg) => {
      const c = self.deref();
      if (!c) return;
      const h = c.holds.get(id);
      if (h) h._event(state, status, msg);
      else c.early.set(id, [state, status, msg]);
    });
    this.holds = new Map();   // id -> Lease: held here, kept alive
    this.early = new Map();   // id -> the last event that came before its Lease
    this.busy = false;        // checked out for a wait or a transaction
  }

  async call(op, ...args) {
    try {
      return await native.call(this.ext, op, ...args);
    } catch (e) {
      throw fromNative(e);
    }
  }

  // A watch event can overtake the acquire's own result (a tiny ttl): it
  // waits in `early` for its Lease.
  attach(id, hold) {
    this.holds.set(id, hold);
    const ev = this.early.get(id);
    if (ev) {
      this.early.delete(id);
      process.nextTick(() => hold._event(...ev));
    }
  }
  detach(id) {
    this.holds.delete(id);
    this.early.delete(id);
    if (this.onFree && this.holds.size === 0 && !this.busy) this.onFree();
  }
}

class Database {
  #url; #opts; #main; #pool = []; #opening = 0; #max; #closed = false;
  #waiters = new Set(); #guards = null; #campaigns = new Set();
  #aborts = new Set();          // aborts the waits running (close())

  /** Use sqllock.open(). */
  constructor(url, opts, secret) {
    if (secret !== Database.#token) throw new TypeError('use sqllock.open(url, options)');
    this.#url = url;
    this.#opts = opts;
    this.#max = opts.maxConnections;
    this.driver = null;
  }

  static #token = Symbol('open');

  static async _open(url, options = {}) {
    if (typeof url !== 'string') throw new TypeError('url must be a string');
    if (options === null || typeof options !== 'object') throw new TypeError('options must be an object');
    const max = options.maxConnections === undefined ? 8 : options.maxConnections;
    if (!Number.isInteger(max) || max < 1) throw invalid(`maxConnections must be an integer >= 1, not ${max}`);
    const opts = {
      maxConnections: max,
      connectTimeout: cv.ms(options.connectTimeout, 'connectTimeout', 0),
      statementTimeout: cv.ms(options.statementTimeout, 'statementTimeout', 0),
      busyTimeout: cv.ms(options.busyTimeout, 'busyTimeout', 0),
    };
    const db = new Database(url, opts, Database.#token);
    const main = await db.#connect(Boolean(options.init));
    db.#main = main;
    db.driver = main.driver;
    // The guard's text depends on the driver and the style only
    // (sqllock_guard_sql()): read it once, so lease.guard() is synchronous.
    const texts = {};
    for (const style of Object.keys(STYLES)) {
      texts[style] = await main.call(ops.GUARD, 'x', 1, STYLES[style], 1);
    }
    db.#guards = texts;
    return db;
  }

  async #connect(init) {
    const c = new Conn();
    try {
      const r = await c.call(ops.OPEN, this.#url, this.#opts.connectTimeout,
        this.#opts.statementTimeout, this.#opts.busyTimeout, init);
      c.driver = r.driver;
    } catch (e) {
      c.call(ops.CLOSE).catch(() => {});
      throw e;
    }
    c.onFree = () => this.#wake();
    return c;
  }

  get closed() { return this.#closed; }
  get maxConnections() { return this.#max; }
  /** Connections open now (the first one included). */
  get connections() { return 1 + this.#pool.length; }

  #check() {
    if (this.#closed) throw new SqllockError(codes.EMISUSE, 'the database handle is closed');
  }

  // ---- the pool -----------------------------------------------------------

  #wake() {
    for (const w of this.#waiters) w();
  }

  // A connection for a wait or a transaction, to itself until #checkin():
  // a free one, a new one while the pool may grow, else the first to come
  // free before `deadline` (sqllock.nowUs() µs; null: none).
  async #checkout(deadline, signal, what) {
    if (this.#max === 1) return this.#main;
    for (;;) {
      this.#check();
      if (signal && signal.aborted) throw abortError(signal);
      const free = this.#pool.find((c) => !c.busy && c.holds.size === 0);
      if (free) {
        free.busy = true;
        return free;
      }
      if (1 + this.#pool.length + this.#opening < this.#max) {
        this.#opening++;
        let c;
        try {
          c = await this.#connect(false);
        } finally {
          this.#opening--;
        }
        if (this.#closed) {
          c.call(ops.CLOSE).catch(() => {});
          this.#check();
        }
        c.busy = true;
        this.#pool.push(c);
        return c;
      }
      const left = deadline === null ? null : (deadline - native.nowUs()) / 1000;
      if (left !== null && left <= 0) {
        throw new SqllockError(codes.TIMEOUT, `${what}: every connection of the ` +
          `database handle's pool (maxConnections=${this.#max}) was waiting, in a ` +
          'transaction or holding a lease acquired by a wait, for the whole wait; ' +
          'raise maxConnections, or release sooner');
      }
      await new Promise((resolve) => {
        let timer = null;
        const done = () => {
          this.#waiters.delete(done);
          if (timer) clearTimeout(timer);
          if (signal) signal.removeEventListener('abort', done);
          resolve();
        };
        this.#waiters.add(done);
        if (left !== null) timer = setTimeout(done, Math.ceil(left));
        if (signal) signal.addEventListener('abort', done, { once: true });
      });
    }
  }

  #checkin(c) {
    if (c === this.#main) return;
    c.busy = false;
    if (c.holds.size === 0) this.#wake();
  }

  // ---- holds ----------------------------------------------------------------

  // The options every hold shares: { ttl, wait, margin, watch, holder,
  // signal }, checked.
  #holdOptions(opts) {
    if (opts === null || typeof opts !== 'object') throw new TypeError('options must be an object');
    const signal = cv.signalOf(opts);
    if (signal && signal.aborted) throw abortError(signal);
    return {
      ttl: cv.ttlMs(opts.ttl),
      wait: cv.waitMs(opts.wait),
      margin: cv.ms(opts.safetyMargin, 'safetyMargin', 0),
      watch: opts.renew === undefined ? true : Boolean(opts.renew),
      holder: opts.holder === undefined ? null : String(opts.holder),
      signal,
    };
  }

  // One try on the first connection; a wait on a connection of its own,
  // where what it acquires stays until released. attempt(c, waitMs, flag)
  // makes the native call on connection c, `flag` the abort flag of the
  // wait: a sliced wait reads it between its slices, and a fair wait
  // (one C wait) is ended by native.cancelWait(), which sets the flag and
  // cancels the C wait (sqllock_lease_cancel()) if it still runs. The
  // addon publishes a fair wait's lease under its conn's mutex only while
  // the C wait runs, so a late cancelWait() finds nothing to cancel; the
  // listener goes all the same as soon as the wait settles.
  async #tryThenWait(what, o, attempt) {
    const { wait, signal } = o;
    const start = native.nowUs();
    const call = async (c, waitMs) => {
      const flag = new Int32Array(new SharedArrayBuffer(4));
      const onAbort = () => native.cancelWait(c.ext, flag);
      if (signal) {
        signal.addEventListener('abort', onAbort, { once: true });
        if (signal.aborted) onAbort();      // aborted while we got here
      }
      this.#aborts.add(onAbort);
      try {
        return await attempt(c, waitMs, flag);
      } catch (e) {
        if (e && e.status === native.ABORTED && this.#closed) {
          throw new SqllockError(codes.EMISUSE, `${what}: the database handle was closed during the wait`);
        }
        throw fromNative(e, signal);
      } finally {
        this.#aborts.delete(onAbort);
        if (signal) signal.removeEventListener('abort', onAbort);
      }
    };
    try {
      return await call(this.#main, 0);
    } catch (e) {
      if (!(e instanceof SqllockError && e.code === 'BUSY' && wait !== 0)) throw e;
    }
    const deadline = wait === cv.FOREVER ? null : start + wait * 1000;
    const c = await this.#checkout(deadline, signal, what);
    try {
      const left = deadline === null ? cv.FOREVER
        : Math.max(1, Math.floor((deadline - native.nowUs()) / 1000));
      return await call(c, left);
    } finally {
      this.#checkin(c);
    }
  }

  async _acquire(kind, name, opts = {}, permits = 0) {
    this.#check();
    cv.name(name);
    const o = this.#holdOptions(opts);
    // Fair waiting (M3) is the plain lease's: the library queues lease
    // waiters only.
    if (opts.fair && kind !== KIND.lease) throw invalid('fair: only db.lock() waits in a fair queue');
    const flags = opts.fair ? native.LEASE_FAIR : 0;
    return this.#tryThenWait(`lock '${name}'`, o, async (c, waitMs, flag) => {
      const r = await native.call(c.ext, ops.ACQUIRE, name, o.holder, kind, o.ttl,
        o.margin, waitMs, o.watch, permits, flags, flag);
      return new Lease(this, c, kind, name, r);
    });
  }

  /** await db.lockMany(names, { ttl, wait, signal, renew, holder }):
   * several leases taken together, all or none (contract L12): one
   * transaction takes every name, in byte order whatever the order given
   * (so two of them never wait for each other in a cycle), or none. A
   * LeaseSet: set.leases (Leases, in the order of names, each with its
   * own token), set.tokens, 'lost' (err, lease), release(). */
  async lockMany(names, opts = {}) {
    this.#check();
    if (!Array.isArray(names)) throw new TypeError('lockMany(names): names must be an array of strings');
    for (const n of names) cv.name(n);
    if (names.length < 1 || names.length > native.LEASE_MANY_MAX) {
      throw invalid(`lockMany takes 1 to ${native.LEASE_MANY_MAX} names, not ${names.length}`);
    }
    if (opts && opts.fair) {
      throw new SqllockError(codes.EUNSUPPORTED, 'lockMany: fair leases cannot be taken together (the library refuses them)');
    }
    const o = this.#holdOptions(opts);
    const what = `lockMany [${names.map((n) => `'${n}'`).join(', ')}]`;
    return this.#tryThenWait(what, o, async (c, waitMs, flag) => {
      const rows = await native.call(c.ext, ops.ACQUIRE_MANY, o.holder, o.ttl,
        o.margin, waitMs, o.watch, names, flag);
      return new LeaseSet(this, c, names, rows);
    });
  }

  /** await db.lock(name, { ttl, wait, signal, renew, holder, safetyMargin,
   * fair }): a lease (contract L1..L10). wait: undefined/Infinity waits
   * for ever, 0 tries once (rejects 'BUSY'), else rejects 'TIMEOUT' when
   * it runs out. signal: an AbortSignal; an aborted wait rejects with
   * AbortError within about SLICE_MS and leaves nothing held. renew
   * (default true): the watchdog renews it every ttl/3; a loss emits
   * 'lost'. fair (M3): waiters are served in arrival order; a fair wait is
   * ONE wait of the library (slices would lose the waiter's place), which
   * an abort, or close(), cancels (sqllock_lease_cancel()): it ends within
   * a pause of the library's backoff, out of the queue, nothing held. */
  lock(name, opts = {}) { return this._acquire(KIND.lease, name, opts); }

  /** One try: rejects with code 'BUSY' when the lock is held. */
  tryLock(name, opts = {}) { return this._acquire(KIND.lease, name, { ...opts, wait: 0 }); }

  /** Runs fn(lease) holding the lease; releases it after, also when fn
   * throws (whose error then wins over a release's). */
  async withLock(name, opts, fn) {
    if (typeof opts === 'function') { fn = opts; opts = {}; }
    if (typeof fn !== 'function') throw new TypeError('withLock(name, opts, fn): fn must be a function');
    const lease = await this.lock(name, opts);
    let result;
    try {
      result = await fn(lease);
    } catch (e) {
      await lease.release().catch(() => {});
      throw e;
    }
    await lease.release();
    return result;
  }

  /** A permit of semaphore `name` of `permits` (contract M1): at most
   * `permits` holders at once. permit.index says which. */
  semaphore(name, permits, opts = {}) {
    if (!Number.isInteger(permits)) throw new TypeError('permits must be an integer');
    return this._acquire(KIND.sem, name, opts, permits);
  }

  /** The live permits of semaphore `name`. */
  async semaphoreCount(name) {
    this.#check();
    return this.#main.call(ops.SEM_COUNT, cv.name(name));
  }

  /** A shared (read) hold of `name`'s shared/exclusive lock (contract M2). */
  shared(name, opts = {}) { return this._acquire(KIND.shared, name, opts); }
  /** The exclusive (write) hold of `name`'s shared/exclusive lock. */
  exclusive(name, opts = {}) { return this._acquire(KIND.exclusive, name, opts); }

  /** The lease row of `name` (or a primitive's row, 'jobs [w]'), or null:
   * { owner, holder, token, remaining (ms, server clock) }. */
  async lookup(name) {
    this.#check();
    const r = await this.#main.call(ops.LOOKUP, cv.name(name));
    if (r) r.token = cv.tokenNumber(r.token);
    return r;
  }

  // ---- the lease table seen from outside ----------------------------------

  /** Every row of the lease table, every client's, in name order: an
   * array of LeaseInfo { name, owner, holder, token, tokenBigInt,
   * acquiredAt, expiresAt (Dates, server clock), remaining (ms; <= 0:
   * expired, not yet taken over or reaped) }. A primitive's rows keep
   * the library's names, BASE + '\x1f' + tag. One read of the table. */
  async list() {
    this.#check();
    const rows = await this.#main.call(ops.LIST);
    return rows.map((r) => new LeaseInfo(r));
  }

  /** An operator's forced release (sqllock_force_release(), contract
   * C5): frees the lease row of `name` whoever holds it and writes the
   * audit line into the name's history, both or neither; the row freed
   * (a LeaseInfo). `name` may be a primitive's row ('jobs [w]', 'jobs
   * [p0]'). live: free a lease still live by the server's clock (else
   * 'BUSY': its holder may be alive and working); token: only that hold
   * (else 'CONFLICT'); who: for the audit line (default user@host).
   * 'NOTFOUND' without a row, 'EKIND' for a kind marker (N1), 'LOST' when
   * the row changed meanwhile (nothing changed); on 'BUSY' and
   * 'CONFLICT' err.row is the row found. Its holder hears 'lost' at its
   * next renewal (L4). */
  async forceRelease(name, opts = {}) {
    this.#check();
    if (opts === null || typeof opts !== 'object') throw new TypeError('options must be an object');
    const { live = false, token, who } = opts;
    cv.name(name);
    let t = 0;                  // the library's "whatever hold is there"
    if (token !== undefined && token !== null) {
      if (!((typeof token === 'bigint' && token > 0n) || (Number.isSafeInteger(token) && token > 0))) {
        throw invalid(`token must be a positive integer (a Number or a BigInt), not ${String(token)}`);
      }
      t = token;
    }
    if (who !== undefined && who !== null && typeof who !== 'string') throw new TypeError('who must be a string');
    try {
      return new LeaseInfo(await native.call(this.#main.ext, ops.FORCE, name,
        who === undefined ? null : who, t, Boolean(live)));
    } catch (e) {
      const err = fromNative(e);
      if (e && Array.isArray(e.row)) err.row = new LeaseInfo(e.row);
      throw err;
    }
  }

  /** One pass of the reaper (contract P1, P4): deletes the lease rows
   * expired more than `grace` ago by the server's clock, `batch` rows
   * per statement; the number deleted. */
  async reap({ grace = 0, batch = 1000 } = {}) {
    this.#check();
    return this.#main.call(ops.REAP, graceMs(grace), integer(batch, 'batch'));
  }

  /** The current leader of election `name`: { holder, token, remaining }
   * or null. */
  async leader(name) {
    this.#check();
    const r = await this.#main.call(ops.LEADER_GET, cv.name(name));
    if (r) r.token = cv.tokenNumber(r.token);
    return r;
  }

  _guardText(style, first) {
    const text = this.#guards[style];
    if (first === 1 || (style !== 'dollar' && style !== 'numeric')) return text;
    // The placeholders of the text read with first = 1 are $1, $2 (or
    // :1, :2): number them from `first` (a test checks this against
    // sqllock_guard_sql() itself).
    const mark = style === 'dollar' ? '\\$' : ':';
    return text.replace(new RegExp(`${mark}([12])(?![0-9])`, 'g'),
      (m, n) => m[0] + String(first + Number(n) - 1));
  }

  /** sqllock_guard_sql() itself, as the library writes it (for tests). */
  async _guardSql(name, token, style, first) {
    return this.#main.call(ops.GUARD, name, token, STYLES[style], first);
  }

  // ---- statements and records ---------------------------------------------

  /** Runs one statement of the application's on the first connection
   * (sqllock_db_exec(): $1.. on PostgreSQL, ? elsewhere; args strings,
   * numbers or bigints): { hasRow, first (bigint|null), affected }. */
  async exec(sql, args = []) {
    this.#check();
    if (typeof sql !== 'string') throw new TypeError('sql must be a string');
    if (!Array.isArray(args)) throw new TypeError('args must be an array');
    return this.#main.call(ops.EXEC, sql, args);
  }

  /** The versioned record `key` (contract O1): { value: Buffer, version }
   * or null when there is none. */
  async get(key) {
    this.#check();
    return rec.get(this.#main, key);
  }

  /** Creates record `key` at version 1; rejects 'CONFLICT' if it exists. */
  async create(key, value) {
    this.#check();
    return rec.create(this.#main, key, value);
  }

  /** Writes `value` if the version is still `expected`: the new version;
   * rejects 'CONFLICT' when another writer got there first. */
  async cas(key, expected, value) {
    this.#check();
    return rec.cas(this.#main, key, expected, value);
  }

  /** Deletes record `key` if its version is still `expected`. */
  async delete(key, expected) {
    this.#check();
    return rec.delete(this.#main, key, expected);
  }

  /** The retry helper (contract O2): reads the record, calls fn(old
   * value Buffer | null) (it may be async) for the new value, writes it
   * with compare-and-set, and on a conflict starts again after a jittered
   * backoff, up to maxAttempts (default 16): { value, version, attempts }.
   * Rejects 'CONFLICT' when every attempt conflicted. */
  async update(key, fn, { maxAttempts = 16, backoffMin = 1, backoffMax = 100 } = {}) {
    if (typeof fn !== 'function') throw new TypeError('fn must be a function');
    let delay = backoffMin;
    for (let attempt = 1; ; attempt++) {
      const cur = await this.get(key);
      const value = bytes(await fn(cur ? cur.value : null));
      try {
        if (cur === null) {
          await this.create(key, value);
          return { value, version: 1, attempts: attempt };
        }
        const version = await this.cas(key, cur.version, value);
        return { value, version, attempts: attempt };
      } catch (e) {
        const conflict = e.code === 'CONFLICT' || e.code === 'EDEADLOCK' || e.code === 'ESERIALIZATION';
        if (!conflict || attempt >= maxAttempts) throw e;
      }
      await new Promise((r) => setTimeout(r, Math.random() * delay));
      delay = Math.min(backoffMax, delay * 2);
    }
  }

  // ---- row-lock transactions ----------------------------------------------

  /** A row-lock transaction (contract R1..R5) on a connection of its own:
   * await db.transaction(async (tx) => { await tx.lock(['a', 'b']); ... })
   * commits when fn returns, rolls back when it throws. */
  async transaction(fn, opts = {}) {
    if (typeof fn !== 'function') throw new TypeError('transaction(fn): fn must be a function');
    const tx = await this.begin(opts);
    let result;
    try {
      result = await fn(tx);
    } catch (e) {
      await tx.rollback().catch(() => {});
      throw e;
    }
    await tx.commit();
    return result;
  }

  /** Begins a transaction; end it with tx.commit() or tx.rollback(). */
  async begin(opts = {}) {
    this.#check();
    const lockTimeout = cv.ms(opts.lockTimeout, 'lockTimeout', 0);
    const c = await this.#checkout(null, cv.signalOf(opts), 'transaction');
    try {
      const r = await c.call(ops.TXN_BEGIN, lockTimeout);
      return new Transaction(c, r.id, () => this.#checkin(c));
    } catch (e) {
      this.#checkin(c);
      throw e;
    }
  }

  // ---- leader election ------------------------------------------------------

  /** Campaigns for election `name` (contract M4): a Campaign. */
  async campaign(name, opts = {}) {
    this.#check();
    const { Campaign } = require('./leader');
    const c = new Campaign(this.#main, name, opts, this.#url, this.#opts, () => this.#campaigns.delete(c));
    this.#campaigns.add(c);
    try {
      await c._start();
    } catch (e) {
      this.#campaigns.delete(c);
      throw e;
    }
    return c;
  }

  /** The C figure for bench.js: `pairs` try-acquire + release pairs on a
   * handle of its own, timed in C on a thread of the pool: microseconds. */
  async _benchC(name, pairs) {
    this.#check();
    const r = await this.#main.call(ops.BENCH_C, this.#url, name, pairs);
    return r.us;
  }

  /** Closes every connection. Holds still held are NOT released: their
   * rows stay until their ttl (release them first); campaigns are
   * stopped (a leader hands over). */
  async close() {
    if (this.#closed) return;
    this.#closed = true;
    this.#wake();
    // Waits end at their next slice (a fair wait at once), so that the
    // close is not queued behind them on their connections.
    for (const abort of this.#aborts) abort();
    await Promise.all([...this.#campaigns].map((c) => c.close().catch(() => {})));
    const all = [this.#main, ...this.#pool];
    await Promise.all(all.map(async (c) => {
      await c.call(ops.CLOSE).catch(() => {});
      for (const h of c.holds.values()) h._closed();
      c.holds.clear();
    }));
  }

  async [Symbol.asyncDispose]() { await this.close(); }
}

class Transaction {
  #conn; #id; #done; #over = false;

  constructor(conn, id, done) {
    this.#conn = conn;
    this.#id = id;
    this.#done = done;
  }

  #check() {
    if (this.#over) throw new SqllockError(codes.EMISUSE, 'the transaction is over');
  }

  /** Locks the library's lock rows `names` (sorted, so never a deadlock
   * through the library, R2), mode 'wait' (default), 'nowait' or 'skip':
   * an array of booleans, per name, whether it is locked now. */
  async lock(names, { mode = 'wait' } = {}) {
    this.#check();
    if (typeof names === 'string') names = [names];
    if (!Array.isArray(names) || names.some((n) => typeof n !== 'string')) {
      throw new TypeError('names must be a string or an array of strings');
    }
    const m = { wait: 0, nowait: 1, skip: 2 }[mode];
    if (m === undefined) throw invalid(`unknown mode '${mode}': wait, nowait or skip`);
    return this.#conn.call(ops.TXN_LOCK, this.#id, m, names);
  }

  /** Locks the application's own rows (sqllock_txn_lock_rows(): SELECT
   * key FROM table WHERE key = ? FOR UPDATE [NOWAIT | SKIP LOCKED] per
   * key, keys in sorted order, R2). table: { table, keyColumn,
   * versionColumn? } (identifiers, quoted by the library); keys: numbers
   * (integers), bigints or strings. Rejects 'NOTFOUND' (wait, nowait)
   * when a key has no row; 'skip' takes the free rows. Returns, per key,
   * whether it is locked now. On SQLite the transaction takes the
   * database's write lock instead (R5). */
  async lockRows(table, keys, { mode = 'wait' } = {}) {
    this.#check();
    if (table === null || typeof table !== 'object' || typeof table.table !== 'string' ||
        typeof table.keyColumn !== 'string' ||
        (table.versionColumn != null && typeof table.versionColumn !== 'string')) {
      throw new TypeError('table must be { table, keyColumn, versionColumn? } (strings)');
    }
    if (!Array.isArray(keys)) keys = [keys];
    for (const k of keys) {
      if (!(typeof k === 'string' || typeof k === 'bigint' || Number.isSafeInteger(k))) {
        throw new TypeError(`a row key is an integer, a bigint or a string, not ${String(k)}`);
      }
    }
    const m = { wait: 0, nowait: 1, skip: 2 }[mode];
    if (m === undefined) throw invalid(`unknown mode '${mode}': wait, nowait or skip`);
    return this.#conn.call(ops.TXN_LOCK_ROWS, this.#id, m, table.table, table.keyColumn,
      table.versionColumn == null ? null : table.versionColumn, keys);
  }

  /** A statement of the application's inside the transaction. */
  async exec(sql, args = []) {
    this.#check();
    return this.#conn.call(ops.EXEC, sql, args);
  }

  // The versioned records inside the transaction: the handle's record
  // calls run in its open transaction, so their writes commit or roll
  // back with it (as Go's tx.Records() and Python's records in
  // db.transaction()).

  /** db.get() inside the transaction. */
  async get(key) {
    this.#check();
    return rec.get(this.#conn, key);
  }

  /** db.create() inside the transaction. */
  async create(key, value) {
    this.#check();
    return rec.create(this.#conn, key, value);
  }

  /** db.cas() inside the transaction. */
  async cas(key, expected, value) {
    this.#check();
    return rec.cas(this.#conn, key, expected, value);
  }

  /** db.delete() inside the transaction. */
  async delete(key, expected) {
    this.#check();
    return rec.delete(this.#conn, key, expected);
  }

  /** One read, fn(old value | null), one compare-and-set (or create),
   * inside the transaction: { value, version }. Unlike db.update() it
   * does not retry: a 'CONFLICT' here is the transaction's to handle
   * (roll back and begin again; on MySQL's REPEATABLE READ a retry in the
   * same transaction would read the same snapshot). Lock the record's
   * name first (tx.lock) to keep other writers out meanwhile. */
  async update(key, fn) {
    if (typeof fn !== 'function') throw new TypeError('fn must be a function');
    const cur = await this.get(key);
    const value = bytes(await fn(cur ? cur.value : null));
    if (cur === null) {
      await this.create(key, value);
      return { value, version: 1 };
    }
    return { value, version: await this.cas(key, cur.version, value) };
  }

  async commit() {
    this.#check();
    this.#over = true;
    try {
      await this.#conn.call(ops.TXN_COMMIT, this.#id);
    } finally {
      this.#done();
    }
  }

  async rollback() {
    if (this.#over) return;
    this.#over = true;
    try {
      await this.#conn.call(ops.TXN_ROLLBACK, this.#id);
    } finally {
      this.#done();
    }
  }
}

// The record calls on a connection: the first one's (Database), or a
// transaction's, where they run inside it.
const rec = {
  async get(conn, key) {
    try {
      const r = await conn.call(ops.REC_GET, cv.name(key, 'key'));
      return { value: r.value, version: Number(r.version) };
    } catch (e) {
      if (e.code === 'NOTFOUND') return null;
      throw e;
    }
  },
  async create(conn, key, value) {
    await conn.call(ops.REC_CREATE, cv.name(key, 'key'), bytes(value));
  },
  async cas(conn, key, expected, value) {
    const r = await conn.call(ops.REC_CAS, cv.name(key, 'key'), expected, bytes(value));
    return Number(r.version);
  },
  async delete(conn, key, expected) {
    await conn.call(ops.REC_DELETE, cv.name(key, 'key'), expected);
  },
};

function bytes(value) {
  if (typeof value === 'string') return Buffer.from(value, 'utf8');
  if (value instanceof Uint8Array) return value;
  throw new TypeError('a record value is a string, a Buffer or a Uint8Array');
}

module.exports = { Database, Transaction, KIND };
