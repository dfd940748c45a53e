'use strict';
// A hold: a lease, a semaphore's permit, or a shared or exclusive hold.
// Each lives on the connection (thread) that acquired it until released
// (a connection of the pool holds only what its own waits acquired).
// The watchdog renews it (contract L7); a loss comes from the renewer
// thread as the event 'lost' with an Error saying why.
const { EventEmitter } = require('events');
const native = require('./native');
const { SqllockError, codes, invalid } = require('./errors');
const { tokenNumber } = require('./convert');

const STATES = ['not-held', 'held', 'uncertain', 'lost'];
const STATE_LOST = 3;
const STYLES = { qmark: 0, dollar: 1, format: 2, pyformat: 3, named: 4, numeric: 5 };
const KIND_NAMES = { 1: 'lease', 2: 'permit', 3: 'shared', 4: 'exclusive', 5: 'leader' };

class Lease extends EventEmitter {
  #db; #conn; #id; #token; #released = false; #lost = null; #ac;

  constructor(db, conn, kind, name, res) {
    super();
    this.#db = db;
    this.#conn = conn;
    this.#id = res.id;
    this.#token = res.token;
    this.#ac = new AbortController();
    /** What kind of hold: 'lease', 'permit', 'shared', 'exclusive'. */
    this.kind = KIND_NAMES[kind];
    /** The lock's name, as given. */
    this.name = name;
    /** The hold's row in the lease table (a permit's: 'NAME\x1fp3'). */
    this.row = res.row;
    /** The owner id of this hold (32 hex digits, contract L3). */
    this.owner = res.owner;
    /** A semaphore permit's index (0..permits-1); -1 for other kinds. */
    this.index = res.permit;
    conn.attach(this.#id, this);
  }

  /** The fencing token (contract L5), a Number (see convert.tokenNumber). */
  get token() { return tokenNumber(this.#token); }
  get tokenBigInt() { return this.#token; }

  /** 'held', 'uncertain' (renewals failing, deadline ahead), 'lost',
   * 'not-held' (released). Read from the library's atomics. */
  get state() {
    if (this.#released) return this.#lost ? 'lost' : 'not-held';
    const s = native.state(this.#conn.ext, this.#id);
    if (s === null) return this.#lost ? 'lost' : 'not-held';
    return this.#lost ? 'lost' : STATES[s[0]];
  }

  get held() { const s = this.state; return s === 'held' || s === 'uncertain'; }

  /** True once the hold was reported lost (event, state, or release). */
  get lost() { return this.#lost !== null || this.state === 'lost'; }

  /** Why it was lost (a SqllockError), or null. */
  get loss() { return this.#lost; }

  /** An AbortSignal that aborts when the hold ends: lost or released. */
  get signal() { return this.#ac.signal; }

  /** Milliseconds the holder may still trust the hold (contract L6). */
  get remaining() {
    if (this.#released) return 0;
    const s = native.state(this.#conn.ext, this.#id);
    if (s === null || s[1] === 0) return 0;
    return Math.max(0, Math.floor((s[1] - native.nowUs()) / 1000));
  }

  // From the renewer thread, through the conn's threadsafe function.
  _event(state, status, message) {
    const err = status === 0 ? null : new SqllockError(status, message);
    this.emit('state', STATES[state], err);
    if (state === STATE_LOST) this.#markLost(err || new SqllockError(codes.LOST, message));
  }

  #markLost(err) {
    if (this.#lost !== null) return;
    this.#lost = err;
    this.#ac.abort(err);
    this.emit('lost', err);
  }

  /** Releases the hold. Rejects with code 'LOST' when another owner had
   * taken it over or it was removed after expiring (contract L4); the
   * hold is over all the same. Completes even if nobody awaits it. */
  async release() {
    if (this.#released) throw new SqllockError(codes.ENOTHELD, `'${this.name}' is not held (released already)`);
    try {
      await this.#conn.call(native.ops.RELEASE, this.#id);
    } catch (e) {
      if (e.code === 'LOST') {
        this.#end();
        this.#markLost(e);
      } else if (e.code === 'ENOTHELD') {
        this.#end();
      }
      throw e;
    }
    this.#end();
  }

  #end() {
    if (this.#released) return;
    this.#released = true;
    this.#conn.detach(this.#id);
    if (!this.#ac.signal.aborted) this.#ac.abort(new SqllockError(codes.ENOTHELD, 'released'));
  }

  // The database was closed under it: the row stays until its ttl.
  _closed() { this.#end(); }

  // For LeaseSet: the native id, whether the hold is over, and its end
  // by a release of the set (err: this lease's LOST, or null).
  get _id() { return this.#id; }
  get _over() { return this.#released; }
  _endedBySet(err) {
    this.#end();
    if (err) this.#markLost(err);
  }

  /** Renews now (for `ttl`, which then stays the lease's ttl). */
  async renew(ttl) {
    const { ttlMs } = require('./convert');
    await this.#conn.call(native.ops.RENEW, this.#id, ttl === undefined ? 0 : ttlMs(ttl));
  }

  /** Throws unless held right now. */
  check() {
    const s = this.state;
    if (s !== 'held' && s !== 'uncertain') {
      throw this.#lost || new SqllockError(s === 'lost' ? codes.LOST : codes.ENOTHELD,
        `'${this.name}' is ${s}`);
    }
  }

  /** The guard of this hold (contract G1) for a write of the
   * application's own, in its client's placeholders: 'dollar' (pg: $n,
   * numbered from `first`), 'qmark' (mysql2, sqlite clients), 'format',
   * 'pyformat', 'named', 'numeric'. Returns { sql, params }: AND the sql
   * into the write's WHERE and bind params (the row's name, the token)
   * at those placeholders. See docs/guard.md. */
  guard(style = 'dollar', first = 1) {
    if (!(style in STYLES)) throw invalid(`unknown placeholder style '${style}': one of ${Object.keys(STYLES).join(', ')}`);
    if (!Number.isInteger(first) || first < 1 || first > 65534) throw invalid(`first must be 1..65534, not ${first}`);
    if (this.kind !== 'lease' && this.kind !== 'leader') {
      throw new SqllockError(codes.EUNSUPPORTED, `a guard is for leases, not a ${this.kind}`);
    }
    if (this.#released) throw new SqllockError(codes.ENOTHELD, `'${this.name}' is not held`);
    const sql = this.#db._guardText(style, first);
    const token = this.token;
    const params = style === 'named' || style === 'pyformat'
      ? { sqllock_name: this.row, sqllock_token: token }
      : [this.row, token];
    return { sql, params };
  }

  async [Symbol.asyncDispose]() {
    if (!this.#released) await this.release();
  }
}

// Several leases taken together by db.lockMany() (contract L12), all on
// the connection that took them. Each is a Lease of its own (token,
// watchdog, 'lost', release()); the set releases them all at once with
// sqllock_lease_release_many(), and re-emits each lease's 'lost' as
// ('lost', err, lease).
class LeaseSet extends EventEmitter {
  #conn;

  constructor(db, conn, names, rows) {
    super();
    this.#conn = conn;
    /** The Leases, in the order of the names given. */
    this.leases = rows.map(([id, token, owner], i) =>
      new Lease(db, conn, 1, names[i], { id, token, owner, permit: -1, row: names[i] }));
    for (const l of this.leases) l.on('lost', (err) => this.emit('lost', err, l));
  }

  /** The names, in the order given. */
  get names() { return this.leases.map((l) => l.name); }
  /** { name: token } (each a Number, see Lease.token). */
  get tokens() { return Object.fromEntries(this.leases.map((l) => [l.name, l.token])); }
  /** True while every lease of the set is held. */
  get held() { return this.leases.every((l) => l.held); }
  /** True once any lease of the set was lost. */
  get lost() { return this.leases.some((l) => l.lost); }
  [Symbol.iterator]() { return this.leases[Symbol.iterator](); }

  /** Releases every lease still held, each whatever the others find;
   * rejects with the first failure ('LOST': that name had been lost). A
   * lease whose release could not reach the database stays held, to be
   * released again. */
  async release() {
    const live = this.leases.filter((l) => !l._over);
    if (live.length === 0) throw new SqllockError(codes.ENOTHELD, 'the lease set is not held (released already)');
    let ended;
    let err = null;
    try {
      ended = await native.call(this.#conn.ext, native.ops.RELEASE_MANY, live.map((l) => l._id));
    } catch (e) {
      ended = Array.isArray(e.ended) ? e.ended : live.map(() => false);
      err = e && typeof e.status === 'number' ? new SqllockError(e.status, e.message) : e;
    }
    live.forEach((l, i) => {
      if (!ended[i]) return;
      const mine = err && err.code === 'LOST' && err.message.includes(`'${l.name}'`);
      l._endedBySet(mine ? err : null);
    });
    if (err) throw err;
  }

  async [Symbol.asyncDispose]() {
    if (this.leases.some((l) => !l._over)) await this.release();
  }
}

module.exports = { Lease, LeaseSet, STYLES };
