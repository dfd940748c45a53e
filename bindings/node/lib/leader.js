'use strict';
// Leader election (contract M4): a candidate campaigns on threads of the
// C library (sqllock_leader_start()); its callbacks arrive here as
// events. At most one leader at a time; each term has a fencing token
// that grows with each new leader; a term ends at its local deadline
// (L6) at the latest, and term.signal aborts then.
const { EventEmitter } = require('events');
const native = require('./native');
const cv = require('./convert');
const { SqllockError, codes } = require('./errors');

const ops = native.ops;

class Campaign extends EventEmitter {
  #conn; #ext = null; #args; #term = null; #ac = null; #closed = false;
  #queue = []; #pulls = []; #onClose; #early = [];

  constructor(conn, name, opts, url, dbopts, onClose) {
    super();
    cv.name(name);
    if (opts === null || typeof opts !== 'object') throw new TypeError('options must be an object');
    this.name = name;
    this.#conn = conn;
    this.#onClose = onClose;
    this.#args = [url, name, opts.holder === undefined ? null : String(opts.holder),
      cv.ttlMs(opts.ttl, 10000), cv.ms(opts.safetyMargin, 'safetyMargin', 0),
      cv.ms(opts.renewInterval, 'renewInterval', 0), cv.ms(opts.resignHold, 'resignHold', 0),
      dbopts.connectTimeout, dbopts.statementTimeout];
  }

  async _start() {
    // A running campaign is kept alive by its threadsafe function (as a
    // listening server is by its handle) until close(), events and all.
    // Events that come before campaign() has resolved (the election may
    // be over before the start's own result arrives) wait until the
    // caller has had the Campaign to listen on.
    this.#ext = native.leaderNew((ev, token, status, text) => {
      if (this.#early) this.#early.push([ev, token, status, text]);
      else this.#event(ev, token, status, text);
    });
    try {
      await this.#conn.call(ops.LEADER_START, this.#ext, ...this.#args);
    } catch (e) {
      this.#closed = true;
      this.#early = null;
      await this.#conn.call(ops.LEADER_STOP, this.#ext).catch(() => {});
      throw e;
    }
    setImmediate(() => {
      const early = this.#early;
      this.#early = null;
      for (const ev of early) this.#event(...ev);
    });
  }

  #event(ev, token, status, text) {
    if (ev === 1) {                       // elected
      this.#ac = new AbortController();
      const term = {
        token: cv.tokenNumber(token),
        tokenBigInt: token,
        signal: this.#ac.signal,
        resign: () => this.resign(),
      };
      this.#term = term;
      this.emit('elected', term);
      this.#push(term);
    } else if (ev === 2) {                // the term ended
      this.#endTerm(token, status === 0 ? null : new SqllockError(status, text));
    } else if (ev === 3) {                // a leader was seen
      this.emit('observed', { holder: text, token: cv.tokenNumber(token) });
    }
  }

  // Ends the current term if it is `token`'s (once: resign() ends it at
  // once, and the campaign thread's report of it comes after).
  #endTerm(token, err) {
    const term = this.#term;
    if (term === null || term.tokenBigInt !== token) return;
    this.#term = null;
    this.#ac.abort(err || new SqllockError(codes.ENOTHELD, 'handed over'));
    this.#ac = null;
    this.emit('deposed', term, err);
  }

  #push(term) {
    const pull = this.#pulls.shift();
    if (pull) pull({ value: term, done: false });
    else this.#queue.push(term);
  }

  /** True while this candidate leads and its local deadline is ahead. */
  get isLeader() {
    return !this.#closed && this.#ext !== null && native.leaderState(this.#ext)[0];
  }

  /** The current term ({ token, signal, resign }) or null. */
  get term() { return this.#term; }

  /** Milliseconds the leader may still act without a renewal. */
  get remaining() {
    return this.#closed || this.#ext === null ? 0 : native.leaderState(this.#ext)[2];
  }

  /** Hands the leadership over now: true; false when this candidate was
   * not the leader. Rejects 'LOST' when the leadership had been lost. */
  async resign() {
    if (this.#closed) throw new SqllockError(codes.EMISUSE, 'the campaign is closed');
    const term = this.#term;
    const done = await this.#conn.call(ops.LEADER_RESIGN, this.#ext);
    // Handed over: the term is over when this resolves (term.signal
    // aborted, 'deposed' emitted), whichever event comes first.
    if (done && term) this.#endTerm(term.tokenBigInt, null);
    return done;
  }

  /** Stops campaigning (a leader hands over first). */
  async close() {
    if (this.#closed) return;
    this.#closed = true;
    try {
      await this.#conn.call(ops.LEADER_STOP, this.#ext);
    } finally {
      if (this.#term) this.#endTerm(this.#term.tokenBigInt, null);   // handed over
      for (const pull of this.#pulls.splice(0)) pull({ value: undefined, done: true });
      if (this.#onClose) await this.#onClose();
    }
  }

  async [Symbol.asyncDispose]() { await this.close(); }

  /** for await (const term of campaign) { ... }: each term as elected,
   * until close(). */
  [Symbol.asyncIterator]() {
    return {
      next: () => {
        if (this.#queue.length) return Promise.resolve({ value: this.#queue.shift(), done: false });
        if (this.#closed) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => this.#pulls.push(resolve));
      },
      return: async () => ({ value: undefined, done: true }),
      [Symbol.asyncIterator]() { return this; },
    };
  }
}

module.exports = { Campaign };
