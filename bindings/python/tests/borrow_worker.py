"""A process of test_G2_R1_exclusion_8_processes_on_the_applications_
connections: `iterations` times, in a transaction of its own DB-API
connection (LIBRARY: psycopg, psycopg2, MySQLdb, sqlite3), joins it,
locks the name, reads the counter row through the application's cursor,
writes it plus one, and commits through the application. Its last line
is the number of Locked/Deadlock retries. Run as:
borrow_worker.py URL LIBRARY NAME TABLE N."""
import contextlib
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import sqllock  # noqa: E402

import dbapi  # noqa: E402


def main() -> int:
    url, library, name, table, n = sys.argv[1:6]
    conn = dbapi.connect(url, library)
    retries = 0
    with sqllock.borrow(conn) as bdb:
        done = 0
        while done < int(n):
            try:
                # psycopg: its own transaction block; the others: the
                # join opens the transaction their library would open.
                block = (conn.transaction() if library == "psycopg"
                         else contextlib.nullcontext())
                with block:
                    with bdb.join(lock_timeout=60) as txn:
                        txn.lock(name)
                        value = dbapi.run(conn, "SELECT n FROM %s WHERE id = 1"
                                          % table)
                        time.sleep(0.0005)          # widen the race window
                        dbapi.run(conn, "UPDATE %s SET n = {} WHERE id = 1"
                                  % table, value + 1)
                if library != "psycopg":
                    conn.commit()
                done += 1
            except (sqllock.Locked, sqllock.Deadlock) as e:
                # R7: the joined transaction failed; the application rolls
                # its own back and tries again.
                print("retry: %s" % e, file=sys.stderr)
                if library != "psycopg":
                    conn.rollback()
                retries += 1
    conn.close()
    print(retries)
    return 0


if __name__ == "__main__":
    sys.exit(main())
