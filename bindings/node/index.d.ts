// Types of the sqllock package (bindings/node). Durations are numbers of
// milliseconds or texts such as '30s' and '1m30s'.
import { EventEmitter } from 'events';

export type Duration = number | string;

export interface OpenOptions {
  /** Create the sqllock tables if missing (idempotent). */
  init?: boolean;
  /** The pool's size, the first connection included (default 8). */
  maxConnections?: number;
  connectTimeout?: Duration;
  statementTimeout?: Duration;
  busyTimeout?: Duration;
}

export interface LockOptions {
  /** The lease's ttl by the server's clock (default 30 s; > 0). */
  ttl?: Duration;
  /** undefined/Infinity: for ever; 0: one try (BUSY); else TIMEOUT. */
  wait?: Duration;
  /** Aborts a wait (AbortError, cause: signal.reason), nothing held. */
  signal?: AbortSignal;
  /** Renewed by the watchdog (default true); a loss emits 'lost'. */
  renew?: boolean;
  holder?: string;
  safetyMargin?: Duration;
  /** db.lock() only: wait in a first-come-first-served queue (M3). A
   * fair wait is one wait of the library; an abort (or close()) cancels
   * it at once: AbortError, out of the queue, nothing held. */
  fair?: boolean;
}

export type LeaseState = 'not-held' | 'held' | 'uncertain' | 'lost';
export type GuardStyle = 'qmark' | 'dollar' | 'format' | 'pyformat' | 'named' | 'numeric';

export declare class SqllockError extends Error {
  constructor(status: number, message?: string);
  /** The status's name: 'BUSY', 'TIMEOUT', 'LOST', 'EINVAL', ... */
  readonly code: string;
  readonly status: number;
  readonly retryable: boolean;
}

export declare class AbortError extends Error {
  readonly code: 'ABORT_ERR';
}

export declare class Lease extends EventEmitter {
  readonly kind: 'lease' | 'permit' | 'shared' | 'exclusive' | 'leader';
  readonly name: string;
  readonly row: string;
  readonly owner: string;
  /** A semaphore permit's index; -1 for other kinds. */
  readonly index: number;
  /** The fencing token; throws RangeError past Number.MAX_SAFE_INTEGER. */
  readonly token: number;
  readonly tokenBigInt: bigint;
  readonly state: LeaseState;
  readonly held: boolean;
  readonly lost: boolean;
  readonly loss: SqllockError | null;
  /** Aborts when the hold ends (lost or released). */
  readonly signal: AbortSignal;
  /** Milliseconds the holder may still trust the hold (L6). */
  readonly remaining: number;
  release(): Promise<void>;
  renew(ttl?: Duration): Promise<void>;
  check(): void;
  guard(style?: GuardStyle, first?: number): { sql: string; params: [string, number] | { sqllock_name: string; sqllock_token: number } };
  [Symbol.asyncDispose](): Promise<void>;
  on(event: 'lost', listener: (err: SqllockError) => void): this;
  on(event: 'state', listener: (state: LeaseState, err: SqllockError | null) => void): this;
  once(event: 'lost', listener: (err: SqllockError) => void): this;
  once(event: 'state', listener: (state: LeaseState, err: SqllockError | null) => void): this;
}

/** Several leases taken together by db.lockMany() (L12). */
export declare class LeaseSet extends EventEmitter implements Iterable<Lease> {
  /** The leases, in the order of the names given. */
  readonly leases: Lease[];
  readonly names: string[];
  /** { name: token } */
  readonly tokens: Record<string, number>;
  /** Every lease of the set is held. */
  readonly held: boolean;
  /** A lease of the set was lost. */
  readonly lost: boolean;
  /** Releases every lease still held; rejects with the first failure. */
  release(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
  [Symbol.iterator](): Iterator<Lease>;
  on(event: 'lost', listener: (err: SqllockError, lease: Lease) => void): this;
  once(event: 'lost', listener: (err: SqllockError, lease: Lease) => void): this;
}

/** An application table for tx.lockRows(): identifiers, quoted by the library. */
export interface TableSpec {
  table: string;
  keyColumn: string;
  versionColumn?: string | null;
}

export type LockMode = 'wait' | 'nowait' | 'skip';

export interface Term {
  token: number;
  tokenBigInt: bigint;
  /** Aborts when the term ends. */
  signal: AbortSignal;
  resign(): Promise<boolean>;
}

export interface CampaignOptions {
  ttl?: Duration;
  holder?: string;
  safetyMargin?: Duration;
  renewInterval?: Duration;
  resignHold?: Duration;
}

export declare class Campaign extends EventEmitter implements AsyncIterable<Term> {
  readonly name: string;
  readonly isLeader: boolean;
  readonly term: Term | null;
  readonly remaining: number;
  resign(): Promise<boolean>;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
  [Symbol.asyncIterator](): AsyncIterator<Term>;
  on(event: 'elected', listener: (term: Term) => void): this;
  on(event: 'deposed', listener: (term: Term | null, err: SqllockError | null) => void): this;
  on(event: 'observed', listener: (leader: { holder: string; token: number }) => void): this;
  once(event: 'elected', listener: (term: Term) => void): this;
  once(event: 'deposed', listener: (term: Term | null, err: SqllockError | null) => void): this;
}

/** One row of the lease table (db.list(), db.forceRelease()). Times by
 * the database server's clock. A primitive's rows keep the library's
 * names: BASE + '\x1f' + tag ('jobs\x1fw', 'jobs\x1fp0'). */
export declare class LeaseInfo {
  readonly name: string;
  readonly owner: string;
  readonly holder: string;
  /** The fencing token; throws RangeError past Number.MAX_SAFE_INTEGER. */
  readonly token: number;
  readonly tokenBigInt: bigint;
  readonly acquiredAt: Date;
  readonly expiresAt: Date;
  /** ms left by the server's clock; <= 0: expired, not yet taken over or reaped. */
  readonly remaining: number;
  toJSON(): object;
}

export interface ForceReleaseOptions {
  /** Free a lease still live by the server's clock (else BUSY). */
  live?: boolean;
  /** Only this hold (else CONFLICT); a positive integer. */
  token?: number | bigint;
  /** Who forces it, for the audit line (default user@host). */
  who?: string;
}

export interface ReapOptions {
  /** Only rows expired longer ago than this (default 0). */
  grace?: Duration;
  /** Rows per DELETE, 1..1000000 (default 1000). */
  batch?: number;
}

export interface ReaperOptions {
  /** Between passes (default 60 s; > 0). */
  every?: Duration;
  grace?: Duration;
  /** Rows per DELETE (default 1000, at most 1000000). */
  batch?: number;
  connectTimeout?: Duration;
  statementTimeout?: Duration;
}

export interface ReaperStats {
  /** Rows deleted. */
  reaped: number;
  /** Passes completed, failed ones included. */
  passes: number;
  /** Passes that failed. */
  errors: number;
  /** Status of the last pass (0: success). */
  lastStatus: number;
  /** Its message; '' after a success. */
  lastError: string;
}

/** The reaper thread (P1-P3). Never keeps the process alive; runs until
 * stop() or the process's end (dropping it does not stop it). */
export declare class Reaper {
  /** True until stop() is called. */
  readonly running: boolean;
  /** Throws SqllockError EMISUSE once stopped. */
  stats(): ReaperStats;
  /** Idempotent: a second call returns the same promise. */
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

export interface ExecResult { hasRow: boolean; first: bigint | null; affected: number; }
export type SqlArg = string | number | bigint;

export declare class Transaction {
  lock(names: string | string[], opts?: { mode?: LockMode }): Promise<boolean[]>;
  /** SELECT key FROM table WHERE key = ? FOR UPDATE per key (sorted); per key, locked now. */
  lockRows(table: TableSpec, keys: SqlArg | SqlArg[], opts?: { mode?: LockMode }): Promise<boolean[]>;
  exec(sql: string, args?: SqlArg[]): Promise<ExecResult>;
  /** The records inside the transaction: they commit or roll back with it. */
  get(key: string): Promise<{ value: Buffer; version: number } | null>;
  create(key: string, value: string | Uint8Array): Promise<void>;
  cas(key: string, expected: number, value: string | Uint8Array): Promise<number>;
  delete(key: string, expected: number): Promise<void>;
  /** One read, fn, one compare-and-set; no retry (CONFLICT is the transaction's). */
  update(key: string, fn: (old: Buffer | null) => string | Uint8Array | Promise<string | Uint8Array>):
    Promise<{ value: Uint8Array; version: number }>;
  commit(): Promise<void>;
  rollback(): Promise<void>;
}

export declare class Database {
  readonly driver: string;
  readonly closed: boolean;
  readonly maxConnections: number;
  readonly connections: number;
  lock(name: string, opts?: LockOptions): Promise<Lease>;
  tryLock(name: string, opts?: Omit<LockOptions, 'wait'>): Promise<Lease>;
  /** All or none (L12); not with fair. */
  lockMany(names: string[], opts?: Omit<LockOptions, 'fair'>): Promise<LeaseSet>;
  withLock<T>(name: string, opts: LockOptions, fn: (lease: Lease) => Promise<T> | T): Promise<T>;
  withLock<T>(name: string, fn: (lease: Lease) => Promise<T> | T): Promise<T>;
  semaphore(name: string, permits: number, opts?: LockOptions): Promise<Lease>;
  semaphoreCount(name: string): Promise<number>;
  shared(name: string, opts?: LockOptions): Promise<Lease>;
  exclusive(name: string, opts?: LockOptions): Promise<Lease>;
  lookup(name: string): Promise<{ owner: string; holder: string; token: number; remaining: number } | null>;
  leader(name: string): Promise<{ holder: string; token: number; remaining: number } | null>;
  campaign(name: string, opts?: CampaignOptions): Promise<Campaign>;
  /** Every lease row, every client's, in name order. */
  list(): Promise<LeaseInfo[]>;
  /** An operator's forced release (C5): the row freed. NOTFOUND, BUSY,
   * CONFLICT (err.row: the row found), EKIND, LOST. */
  forceRelease(name: string, opts?: ForceReleaseOptions): Promise<LeaseInfo>;
  /** One pass of the reaper (P1, P4): rows deleted. */
  reap(opts?: ReapOptions): Promise<number>;
  exec(sql: string, args?: SqlArg[]): Promise<ExecResult>;
  get(key: string): Promise<{ value: Buffer; version: number } | null>;
  create(key: string, value: string | Uint8Array): Promise<void>;
  cas(key: string, expected: number, value: string | Uint8Array): Promise<number>;
  delete(key: string, expected: number): Promise<void>;
  update(key: string, fn: (old: Buffer | null) => string | Uint8Array | Promise<string | Uint8Array>,
    opts?: { maxAttempts?: number; backoffMin?: number; backoffMax?: number }):
    Promise<{ value: Uint8Array; version: number; attempts: number }>;
  transaction<T>(fn: (tx: Transaction) => Promise<T>, opts?: { lockTimeout?: Duration }): Promise<T>;
  begin(opts?: { lockTimeout?: Duration }): Promise<Transaction>;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

export declare function open(url: string, options?: OpenOptions): Promise<Database>;
export declare function campaign(url: string, name: string,
  options?: CampaignOptions & OpenOptions): Promise<Campaign>;
/** Starts a reaper thread on a connection of its own; rejects with a
 * SqllockError for a bad URL or an unreachable server. */
export declare function startReaper(url: string, options?: ReaperOptions): Promise<Reaper>;
export declare const codes: Readonly<Record<string, number>>;
export declare function nowUs(): number;
export declare function parseDuration(text: string): number;
export declare const version: string;
export declare const SLICE_MS: number;
