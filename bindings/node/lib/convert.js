'use strict';
// Durations and names. A duration is a number of milliseconds or a text
// that sqllock_parse_duration() reads ('30s', '1m30s', '250ms').
const native = require('./native');
const { invalid } = require('./errors');

const FOREVER = -1;             // a wait without a deadline, for the addon

// ms(value, what): a duration in ms (>= 0); undefined gives `dflt`.
function ms(value, what, dflt) {
  if (value === undefined || value === null) return dflt;
  if (typeof value === 'string') {
    try {
      return native.parseDuration(value);
    } catch (e) {
      throw invalid(`${what}: ${e.message}`);
    }
  }
  if (typeof value !== 'number' || Number.isNaN(value)) {
    throw new TypeError(`${what} must be a number of milliseconds or a ` +
      `duration text such as '30s', not ${typeof value}`);
  }
  if (value < 0) throw invalid(`${what} must not be negative (${value})`);
  if (value === Infinity) return Infinity;
  return Math.round(value);
}

// The ttl of a hold: required positive (contract: ttl > 0).
function ttlMs(value, dflt = 30000) {
  const t = ms(value, 'ttl', dflt);
  if (!(t > 0) || t === Infinity) {
    throw invalid(`ttl must be a positive duration, not ${String(value)}`);
  }
  return t;
}

// A wait: undefined or Infinity waits for ever, 0 tries once.
function waitMs(value) {
  const w = ms(value, 'wait', Infinity);
  return w > Number.MAX_SAFE_INTEGER ? FOREVER : w;   // 285 000 years: for ever
}

function name(value, what = 'name') {
  if (typeof value !== 'string') {
    throw new TypeError(`${what} must be a string, not ${value === null ? 'null' : typeof value}`);
  }
  return value;       // empty, oversized, malformed: the library says so
}

function signalOf(opts) {
  const s = opts && opts.signal;
  if (s !== undefined && s !== null &&
      (typeof s !== 'object' || typeof s.aborted !== 'boolean' ||
       typeof s.addEventListener !== 'function')) {
    throw new TypeError('signal must be an AbortSignal');
  }
  return s || undefined;
}

// A bigint token as a Number. Tokens come from a per-database counter
// that grows by one per grant: 2^53 of them is 285 years at a million
// grants a second, so a Number (what every JS client and JSON carry)
// is exact. Past that the binding refuses rather than round.
function tokenNumber(big) {
  if (big > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new RangeError(`fencing token ${big} is past Number.MAX_SAFE_INTEGER: ` +
      'read lease.tokenBigInt');
  }
  return Number(big);
}

module.exports = { ms, ttlMs, waitMs, name, signalOf, tokenNumber, FOREVER };
