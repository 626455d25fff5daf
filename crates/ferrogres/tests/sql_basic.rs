//! The SQL layer end to end: the `ferrogres` binary driven by psql, with output
//! compared byte for byte against what PostgreSQL 15 printed for the same script
//! (`tests/sql/NAME.sql` -> `tests/expected/NAME.out`, made with
//! `psql -X -a -q -v ON_ERROR_STOP=0 -f sql/NAME.sql` against a local PostgreSQL
//! 15), plus durability across a clean restart and a crash, and the extended
//! protocol with parameters through a raw client.

mod common;
use common::server::{check_script, Server};
use common::*;
use std::io::{Read, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

#[test]
fn basic_statements_match_postgres_15() {
    check_script("basic");
}

#[test]
fn upsert_matches_postgres_15() {
    check_script("upsert");
}

#[test]
fn update_from_and_delete_using_match_postgres_15() {
    check_script("update_from");
}

#[test]
fn merge_matches_postgres_15() {
    check_script("merge");
}

#[test]
fn transactions_match_postgres_15() {
    check_script("transactions");
}

#[test]
fn types_and_errors_match_postgres_15() {
    check_script("types");
}

#[test]
fn numeric_matches_postgres_15() {
    check_script("numeric");
}

#[test]
fn errors_match_postgres_15() {
    check_script("errors");
}

#[test]
fn indexes_match_postgres_15() {
    check_script("indexes");
}

#[test]
fn locking_statements_match_postgres_15() {
    check_script("locking");
}

#[test]
fn expressions_match_postgres_15() {
    check_script("expressions");
}

/// IN lists of constants are `x = ANY ('{...}')` / `x <> ALL ('{...}')` in
/// EXPLAIN, with PostgreSQL's answers for NULL items, NULL operands,
/// `character(n)` columns and lists longer than nine items.
#[test]
fn scalar_functions_in_from_match_postgres_15() {
    check_script("functions_in_from");
}

/// RETURNING of INSERT (VALUES, SELECT, in WITH), ON CONFLICT and UPDATE
/// names the system columns of the version written (ctid, xmin, cmin, xmax,
/// cmax, tableoid), with PostgreSQL 15's values.
#[test]
fn returning_names_system_columns_as_postgres_15() {
    check_script("returning_system_columns");
}

/// txid_current() and txid_current_if_assigned(): the top-level xid, assigned
/// on demand, the same in a savepoint, as PostgreSQL 15.
#[test]
fn txid_functions_match_postgres_15() {
    check_script("txid");
}

/// xid8, pg_current_xact_id(), pg_xact_status() and txid_status() of
/// committed, aborted and running (sub)transactions, xid = int4, as
/// PostgreSQL 15.
#[test]
fn xid8_and_xact_status_match_postgres_15() {
    check_script("xid8");
}

/// pg_snapshot and txid_snapshot: input checks, storage, their functions
/// and the current snapshot, as PostgreSQL 15 (its own regression
/// statements for them).
#[test]
fn pg_snapshot_matches_postgres_15() {
    check_script("pg_snapshot");
}

#[test]
fn in_lists_match_postgres_15() {
    check_script("in_lists");
}

#[test]
fn grouping_matches_postgres_15() {
    check_script("grouping");
}

#[test]
fn window_functions_match_postgres_15() {
    check_script("window");
}

#[test]
fn plan_cache_follows_catalog_and_settings() {
    check_script("plan_cache");
}

#[test]
fn unique_indexes_with_include_match_postgres_15() {
    check_script("include");
}

#[test]
fn prepare_execute_deallocate_match_postgres_15() {
    check_script("prepare");
}

#[test]
fn data_survives_restart_and_crash() {
    let dir = tempfile::tempdir().unwrap();
    let mut srv = Server::start(dir.path());
    let (out, err) = srv.sql(
        "CREATE TABLE kept (id int NOT NULL, v text); \
         INSERT INTO kept SELECT NULL, 'x'; ",
    );
    // The INSERT fails (NOT NULL): the whole string (one implicit transaction)
    // failed, so the table does not exist either.
    assert!(err.contains("null value in column \"id\" of relation \"kept\" violates not-null constraint"), "{out} {err}");
    let (_, err) = srv.sql("CREATE TABLE kept (id int NOT NULL, v text)");
    assert_eq!(err, "");
    let big = "y".repeat(100_000); // TOASTed
    let (_, err) = srv.sql(&format!("INSERT INTO kept VALUES (1, 'one'), (2, 'two'), (3, '{big}')"));
    assert_eq!(err, "");
    let (_, err) = srv.sql("BEGIN; CREATE TABLE gone (a int); INSERT INTO gone VALUES (1); ROLLBACK;");
    assert_eq!(err, "");
    let (_, err) = srv.sql("DELETE FROM kept WHERE id = 2");
    assert_eq!(err, "");

    // Clean restart.
    srv.signal(libc::SIGTERM);
    let mut srv = Server::start(dir.path());
    let (out, err) = srv.sql("SELECT id, length(v) FROM kept ORDER BY id");
    assert_eq!((out.as_str(), err.as_str()), ("1|3\n3|100000\n", ""));
    let (_, err) = srv.sql("SELECT * FROM gone");
    assert!(err.contains("relation \"gone\" does not exist"), "{err}");

    // A transaction left open when the server is killed.
    let (_, err) = srv.sql("INSERT INTO kept VALUES (4, 'committed')");
    assert_eq!(err, "");
    let mut open = srv
        .psql_cmd()
        .args(["-At", "-v", "ON_ERROR_STOP=1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = open.stdin.take().unwrap();
    stdin
        .write_all(b"BEGIN;\nINSERT INTO kept VALUES (5, 'uncommitted');\nCREATE TABLE uncommitted_t (a int);\nSELECT 'inserted';\n")
        .unwrap();
    stdin.flush().unwrap();
    let mut stdout = open.stdout.take().unwrap();
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !String::from_utf8_lossy(&seen).contains("inserted") {
        let mut buf = [0u8; 256];
        let n = stdout.read(&mut buf).unwrap();
        assert!(n > 0 && Instant::now() < deadline, "psql ended: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    srv.signal(libc::SIGKILL);
    drop(stdin);
    let _ = open.wait();

    let srv = Server::start(dir.path());
    assert!(srv.log().contains("automatic recovery"), "{}", srv.log());
    let (out, err) = srv.sql("SELECT id, v FROM kept WHERE id <> 3 ORDER BY id");
    assert_eq!((out.as_str(), err.as_str()), ("1|one\n4|committed\n", ""));
    let (_, err) = srv.sql("SELECT * FROM uncommitted_t");
    assert!(err.contains("relation \"uncommitted_t\" does not exist"), "{err}");
}

// ---- extended protocol through a raw client --------------------------------------

struct Raw(std::net::TcpStream);

impl Raw {
    fn connect(port: u16) -> Raw {
        let s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut r = Raw(s);
        let mut body = 196608i32.to_be_bytes().to_vec();
        for kv in ["user", "postgres", "database", "postgres"] {
            body.extend(cstr(kv));
        }
        body.push(0);
        let mut p = ((body.len() + 4) as i32).to_be_bytes().to_vec();
        p.extend(body);
        r.0.write_all(&p).unwrap();
        r.until_ready();
        r
    }
    fn read(&mut self) -> (u8, Vec<u8>) {
        let mut h = [0u8; 5];
        self.0.read_exact(&mut h).unwrap();
        let len = i32::from_be_bytes(h[1..5].try_into().unwrap()) as usize;
        let mut b = vec![0; len - 4];
        self.0.read_exact(&mut b).unwrap();
        (h[0], b)
    }
    fn until_ready(&mut self) -> Vec<(u8, Vec<u8>)> {
        let mut v = Vec::new();
        loop {
            let m = self.read();
            let done = m.0 == b'Z';
            v.push(m);
            if done {
                return v;
            }
        }
    }
    fn send(&mut self, parts: &[Vec<u8>]) -> Vec<(u8, Vec<u8>)> {
        self.0.write_all(&parts.concat()).unwrap();
        self.until_ready()
    }
}


/// Values of a DataRow.
fn row(b: &[u8]) -> Vec<Option<Vec<u8>>> {
    let n = i16::from_be_bytes([b[0], b[1]]) as usize;
    let mut i = 2;
    let mut out = Vec::new();
    for _ in 0..n {
        let len = i32::from_be_bytes(b[i..i + 4].try_into().unwrap());
        i += 4;
        if len < 0 {
            out.push(None);
        } else {
            out.push(Some(b[i..i + len as usize].to_vec()));
            i += len as usize;
        }
    }
    out
}

fn error_field(b: &[u8], code: u8) -> String {
    let mut i = 0;
    while i < b.len() && b[i] != 0 {
        let end = b[i + 1..].iter().position(|&c| c == 0).unwrap() + i + 1;
        if b[i] == code {
            return String::from_utf8_lossy(&b[i + 1..end]).into_owned();
        }
        i = end + 1;
    }
    String::new()
}

#[test]
fn extended_protocol_with_parameters() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let mut r = Raw::connect(srv.port);
    let v = r.send(&[msg(b'Q', &cstr("CREATE TABLE p (a int NOT NULL, b text, c bigint)"))]);
    assert_eq!(types(&v), "CZ");

    // Parameter types inferred from the target columns; text and binary formats.
    let v = r.send(&[
        parse("ins", "INSERT INTO p VALUES ($1, $2, $3)", &[]),
        describe(b'S', "ins"),
        bind("", "ins", &[0], &[Some(b"1"), Some(b"one"), Some(b"10")], &[]),
        execute("", 0),
        bind("", "ins", &[1, 0, 1], &[Some(&2i32.to_be_bytes()), None, Some(&20i64.to_be_bytes())], &[]),
        execute("", 0),
        sync(),
    ]);
    assert_eq!(types(&v), "1tn2C2CZ", "{v:?}");
    let t = &v[1].1;
    assert_eq!(i16::from_be_bytes([t[0], t[1]]), 3);
    let oids: Vec<u32> = (0..3).map(|i| u32::from_be_bytes(t[2 + 4 * i..6 + 4 * i].try_into().unwrap())).collect();
    assert_eq!(oids, [23, 25, 20]);
    assert_eq!(v[4].1, b"INSERT 0 1\0");

    // A parameter compared with a column; rows in binary; a row limit.
    let v = r.send(&[
        parse("sel", "SELECT a, b FROM p WHERE a >= $1 ORDER BY a", &[]),
        bind("cur", "sel", &[], &[Some(b"1")], &[1, 0]),
        describe(b'P', "cur"),
        execute("cur", 1),
        execute("cur", 1),
        sync(),
    ]);
    // The second Execute got as many rows as it asked for: PortalSuspended, as
    // PostgreSQL's executor does not look for another row.
    assert_eq!(types(&v), "12TDsDsZ", "{v:?}");
    assert_eq!(row(&v[3].1), vec![Some(1i32.to_be_bytes().to_vec()), Some(b"one".to_vec())]);
    assert_eq!(row(&v[5].1), vec![Some(2i32.to_be_bytes().to_vec()), None]);

    // Client-given parameter type; bad input for it is 22P02 and the session goes on.
    let v = r.send(&[parse("", "SELECT $1 + 1", &[20]), bind("", "", &[], &[Some(b"x")], &[]), execute("", 0), sync()]);
    assert_eq!(types(&v), "1EZ");
    assert_eq!(error_field(&v[1].1, b'C'), "22P02");
    assert_eq!(error_field(&v[1].1, b'M'), "invalid input syntax for type bigint: \"x\"");
    let v = r.send(&[parse("", "SELECT $1::int8 * 2", &[]), bind("", "", &[], &[Some(b"21")], &[]), execute("", 0), sync()]);
    assert_eq!(types(&v), "12DCZ");
    assert_eq!(row(&v[2].1), vec![Some(b"42".to_vec())]);

    // A NOT NULL violation through a parameter.
    let v = r.send(&[bind("", "ins", &[], &[None, Some(b"x"), None], &[]), execute("", 0), sync()]);
    assert_eq!(types(&v), "2EZ");
    assert_eq!(error_field(&v[1].1, b'C'), "23502");
    assert_eq!(error_field(&v[1].1, b'D'), "Failing row contains (null, x, null).");

    // The prepared statement is re-analyzed after DDL: the table is gone.
    let v = r.send(&[msg(b'Q', &cstr("DROP TABLE p"))]);
    assert_eq!(types(&v), "CZ");
    let v = r.send(&[bind("", "ins", &[], &[Some(b"3"), Some(b"x"), Some(b"3")], &[]), execute("", 0), sync()]);
    assert_eq!(types(&v), "EZ");
    assert_eq!(error_field(&v[0].1, b'C'), "42P01");

    // Transaction control through the extended protocol.
    let v = r.send(&[parse("", "BEGIN", &[]), bind("", "", &[], &[], &[]), execute("", 0), sync()]);
    assert_eq!(types(&v), "12CZ");
    assert_eq!(v.last().unwrap().1, b"T");
    let v = r.send(&[parse("", "SELECT nosuch", &[]), sync()]);
    assert_eq!(v.last().unwrap().1, b"E");
    let v = r.send(&[parse("", "ROLLBACK", &[]), bind("", "", &[], &[], &[]), execute("", 0), sync()]);
    assert_eq!(types(&v), "12CZ");
    assert_eq!(v.last().unwrap().1, b"I");
}

#[test]
fn update_matches_postgres_15() {
    check_script("update");
}

#[test]
fn concurrent_update_rechecks_the_newest_version() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let mut a = Raw::connect(srv.port);
    let mut b = Raw::connect(srv.port);
    let q = |s: &str| msg(b'Q', &cstr(s));
    assert_eq!(types(&a.send(&[q("CREATE TABLE c (id int, n int); INSERT INTO c VALUES (1, 0), (2, 0)")])), "CCZ");
    assert_eq!(types(&a.send(&[q("BEGIN; UPDATE c SET n = n + 1 WHERE id = 1")])), "CCZ");
    // b waits for a's row, then increments the version a committed (READ COMMITTED).
    b.0.write_all(&q("UPDATE c SET n = n + 10 WHERE n = 1 OR id = 1")).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(types(&a.send(&[q("COMMIT")])), "CZ");
    let v = b.until_ready();
    assert_eq!(types(&v), "CZ", "{v:?}");
    assert_eq!(v[0].1, b"UPDATE 1\0");
    let v = a.send(&[q("SELECT id, n FROM c ORDER BY id")]);
    let rows: Vec<Vec<Option<Vec<u8>>>> = v.iter().filter(|m| m.0 == b'D').map(|m| row(&m.1)).collect();
    assert_eq!(rows, vec![vec![Some(b"1".to_vec()), Some(b"11".to_vec())], vec![Some(b"2".to_vec()), Some(b"0".to_vec())]]);
    // REPEATABLE READ: the same conflict is a serialization failure.
    assert_eq!(types(&a.send(&[q("BEGIN; UPDATE c SET n = 0 WHERE id = 2")])), "CCZ");
    assert_eq!(types(&b.send(&[q("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT 1")])), "CTDCZ");
    b.0.write_all(&q("UPDATE c SET n = 5 WHERE id = 2")).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(types(&a.send(&[q("COMMIT")])), "CZ");
    let v = b.until_ready();
    assert_eq!(types(&v), "EZ", "{v:?}");
    assert_eq!(error_field(&v[0].1, b'C'), "40001");
    assert_eq!(types(&b.send(&[q("ROLLBACK")])), "CZ");
}

#[test]
fn uncommitted_rows_are_invisible_to_other_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let mut a = Raw::connect(srv.port);
    let mut b = Raw::connect(srv.port);
    let q = |s: &str| msg(b'Q', &cstr(s));
    assert_eq!(types(&a.send(&[q("CREATE TABLE m (a int)")])), "CZ");
    assert_eq!(types(&a.send(&[q("BEGIN; INSERT INTO m VALUES (1), (2)")])), "CCZ");
    let count = |r: &mut Raw| {
        let v = r.send(&[q("SELECT count(*) FROM m")]);
        assert_eq!(types(&v), "TDCZ", "{v:?}");
        String::from_utf8(row(&v[1].1)[0].clone().unwrap()).unwrap()
    };
    assert_eq!(count(&mut b), "0");
    assert_eq!(count(&mut a), "2");
    // A repeatable-read reader keeps its snapshot across the commit.
    assert_eq!(types(&b.send(&[q("BEGIN ISOLATION LEVEL REPEATABLE READ")])), "CZ");
    assert_eq!(count(&mut b), "0");
    assert_eq!(types(&a.send(&[q("COMMIT")])), "CZ");
    assert_eq!(count(&mut b), "0");
    assert_eq!(types(&b.send(&[q("COMMIT")])), "CZ");
    assert_eq!(count(&mut b), "2");
    // A delete waits for a concurrent deleter of the same row, then skips it.
    assert_eq!(types(&a.send(&[q("BEGIN; DELETE FROM m WHERE a = 1")])), "CCZ");
    b.0.write_all(&q("DELETE FROM m")).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(types(&a.send(&[q("COMMIT")])), "CZ");
    let v = b.until_ready();
    assert_eq!(types(&v), "CZ");
    assert_eq!(v[0].1, b"DELETE 1\0");
    assert_eq!(count(&mut a), "0");
}

#[test]
fn copy_matches_postgres_15() {
    check_script("copy");
}

#[test]
fn insert_select_matches_postgres_15() {
    check_script("insert_select");
}

#[test]
fn character_types_match_postgres_15() {
    check_script("chartypes");
}

#[test]
fn datetime_types_match_postgres_15() {
    check_script("datetime");
}

/// pgbench's history table: `timestamp` filled with CURRENT_TIMESTAMP and a
/// `char(22)` filler; the values round-trip in text and binary through the
/// extended protocol, and RowDescription carries the types and typmods.
#[test]
fn pgbench_history_row_round_trips_text_and_binary() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let mut r = Raw::connect(srv.port);
    let v = r.send(&[query("SET TimeZone = 'UTC'")]);
    assert_eq!(types(&v).replace('S', ""), "CZ", "{v:?}");
    let v = r.send(&[query("CREATE TABLE h (tid int, mtime timestamp, filler char(22))")]);
    assert_eq!(types(&v), "CZ", "{v:?}");
    let v = r.send(&[query("INSERT INTO h (tid, mtime, filler) VALUES (1, CURRENT_TIMESTAMP, NULL)")]);
    assert_eq!(types(&v), "CZ", "{v:?}");
    // A parameterized insert: timestamp in binary (microseconds since 2000-01-01), bpchar in text.
    let ts_2024 = 762_523_200_000_000i64 + 1; // 2024-02-29 12:00:00.000001
    let v = r.send(&[
        parse("ins", "INSERT INTO h VALUES ($1, $2, $3)", &[]),
        bind("", "ins", &[0, 1, 0], &[Some(b"2"), Some(&ts_2024.to_be_bytes()), Some(b"ab")], &[]),
        execute("", 0),
        sync(),
    ]);
    assert_eq!(types(&v), "12CZ", "{v:?}");
    // Text results.
    let v = r.send(&[
        parse("sel", "SELECT tid, mtime, filler, mtime <= now() AS past FROM h ORDER BY tid", &[]),
        bind("", "sel", &[], &[], &[0]),
        describe(b'P', ""),
        execute("", 0),
        sync(),
    ]);
    assert_eq!(types(&v), "12TDDCZ", "{v:?}");
    let t = &v[2].1;
    // RowDescription: per field name\0, table oid (4), attnum (2), type oid (4), typlen (2), typmod (4), format (2).
    let mut fields = Vec::new();
    let mut i = 2;
    for _ in 0..4 {
        let end = t[i..].iter().position(|&c| c == 0).unwrap() + i;
        let oid = u32::from_be_bytes(t[end + 7..end + 11].try_into().unwrap());
        let typmod = i32::from_be_bytes(t[end + 13..end + 17].try_into().unwrap());
        fields.push((String::from_utf8_lossy(&t[i..end]).into_owned(), oid, typmod));
        i = end + 19;
    }
    assert_eq!(fields[1].1, 1114);
    assert_eq!((fields[2].1, fields[2].2), (1042, 26));
    let first = row(&v[3].1);
    let mtime = String::from_utf8(first[1].clone().unwrap()).unwrap();
    assert!(mtime.len() >= 19 && &mtime[4..5] == "-" && &mtime[10..11] == " ", "{mtime}");
    assert_eq!(first[2], None);
    assert_eq!(first[3], Some(b"t".to_vec()));
    let second = row(&v[4].1);
    assert_eq!(second[1], Some(b"2024-02-29 12:00:00.000001".to_vec()));
    assert_eq!(second[2], Some(format!("ab{}", " ".repeat(20)).into_bytes()));
    // Binary results: the same instant as int8 microseconds.
    let v = r.send(&[bind("", "sel", &[], &[], &[1]), execute("", 0), sync()]);
    assert_eq!(types(&v), "2DDCZ", "{v:?}");
    let second = row(&v[2].1);
    assert_eq!(second[1], Some(ts_2024.to_be_bytes().to_vec()));
    assert_eq!(second[2], Some(format!("ab{}", " ".repeat(20)).into_bytes()));
    // The first row's mtime read back in binary matches its text form.
    let first_bin = row(&v[1].1);
    let us = i64::from_be_bytes(first_bin[1].clone().unwrap().try_into().unwrap());
    let v = r.send(&[
        parse("", "SELECT $1::timestamp::text = $2", &[1114, 25]),
        bind("", "", &[1, 0], &[Some(&us.to_be_bytes()), Some(mtime.as_bytes())], &[]),
        execute("", 0),
        sync(),
    ]);
    assert_eq!(types(&v), "12DCZ", "{v:?}");
    assert_eq!(row(&v[2].1), vec![Some(b"t".to_vec())]);
    // Over-long filler: 22001.
    let v = r.send(&[query(&format!("INSERT INTO h VALUES (3, NULL, '{}')", "x".repeat(23)))]);
    assert_eq!(error_field(&v[0].1, b'C'), "22001");
    assert_eq!(error_field(&v[0].1, b'M'), "value too long for type character(22)");
}

#[test]
fn bytea_matches_postgres_15() {
    check_script("bytea");
}

#[test]
fn float4_matches_postgres_15() {
    check_script("float4");
}

#[test]
fn arrays_match_postgres_15() {
    check_script("arrays");
}

#[test]
fn catalog_matches_postgres_15() {
    check_script("catalog");
}

#[test]
fn joins_match_postgres_15() {
    check_script("joins");
}

#[test]
fn subqueries_match_postgres_15() {
    check_script("subselect");
}

#[test]
fn set_operations_match_postgres_15() {
    check_script("union");
}

#[test]
fn with_queries_match_postgres_15() {
    check_script("with");
}

#[test]
fn sequences_and_serial_match_postgres_15() {
    check_script("sequences");
}

#[test]
fn check_constraints_match_postgres_15() {
    check_script("constraints");
}

#[test]
fn foreign_keys_match_postgres_15() {
    check_script("foreign_keys");
}

#[test]
fn alter_table_add_constraint_matches_postgres_15() {
    check_script("alter_table");
}

#[test]
fn alter_column_matches_postgres_15() {
    check_script("alter_column");
}

#[test]
fn identity_columns_match_postgres_15() {
    check_script("identity");
}

#[test]
fn explain_matches_postgres_15() {
    check_script("explain");
}

/// numeric through the extended protocol: parameters in binary (PostgreSQL's
/// numeric_send layout: ndigits, weight, sign, dscale, base-10000 digits) and
/// text, results in both formats, and numeric(12,2)'s typmod in RowDescription.
/// The byte strings are what PostgreSQL 15's `numeric_send(...)` returns.
#[test]
fn numeric_binary_io_uses_postgres_wire_format() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let mut r = Raw::connect(srv.port);
    let v = r.send(&[query("CREATE TABLE nb (id int, x numeric, m numeric(12,2))")]);
    assert_eq!(types(&v), "CZ", "{v:?}");
    let one_and_half = [0u8, 2, 0, 0, 0, 0, 0, 1, 0, 1, 0x13, 0x88]; // 1.5
    let small_neg = [0u8, 2, 0xff, 0xff, 0x40, 0, 0, 5, 0, 1, 0x07, 0xd0]; // -0.00012
    let big = [0u8, 3, 0, 1, 0, 0, 0, 3, 0, 1, 0x09, 0x29, 0x1a, 0x7c]; // 12345.678
    let v = r.send(&[
        parse("ins", "INSERT INTO nb VALUES ($1, $2, $3)", &[]),
        bind("", "ins", &[0, 1, 1], &[Some(b"1"), Some(&small_neg), Some(&big)], &[]),
        execute("", 0),
        bind("", "ins", &[0, 1, 0], &[Some(b"2"), Some(&one_and_half), Some(b"-7.005")], &[]),
        execute("", 0),
        sync(),
    ]);
    assert_eq!(types(&v), "12C2CZ", "{v:?}");
    // Text results, and the column's typmod (12 << 16 | 2) + 4 in RowDescription.
    let v = r.send(&[
        parse("sel", "SELECT x, m FROM nb ORDER BY id", &[]),
        bind("", "sel", &[], &[], &[0]),
        describe(b'P', ""),
        execute("", 0),
        sync(),
    ]);
    assert_eq!(types(&v), "12TDDCZ", "{v:?}");
    let t = &v[2].1;
    let end = t[2..].iter().position(|&c| c == 0).unwrap() + 2;
    let start_m = end + 19;
    let end_m = t[start_m..].iter().position(|&c| c == 0).unwrap() + start_m;
    let oid = u32::from_be_bytes(t[end_m + 7..end_m + 11].try_into().unwrap());
    let typmod = i32::from_be_bytes(t[end_m + 13..end_m + 17].try_into().unwrap());
    assert_eq!((oid, typmod), (1700, 786438));
    assert_eq!(row(&v[3].1), vec![Some(b"-0.00012".to_vec()), Some(b"12345.68".to_vec())]);
    assert_eq!(row(&v[4].1), vec![Some(b"1.5".to_vec()), Some(b"-7.01".to_vec())]);
    // Binary results.
    let v = r.send(&[bind("", "sel", &[], &[], &[1]), execute("", 0), sync()]);
    assert_eq!(types(&v), "2DDCZ", "{v:?}");
    let m1 = vec![0u8, 3, 0, 1, 0, 0, 0, 2, 0, 1, 0x09, 0x29, 0x1a, 0x90]; // 12345.68
    let m2 = vec![0u8, 2, 0, 0, 0x40, 0, 0, 2, 0, 7, 0, 0x64]; // -7.01
    assert_eq!(row(&v[1].1), vec![Some(small_neg.to_vec()), Some(m1)]);
    assert_eq!(row(&v[2].1), vec![Some(one_and_half.to_vec()), Some(m2)]);
    // A bad sign word is 22P03, as numeric_recv reports it.
    let v = r.send(&[
        parse("", "SELECT $1::numeric", &[1700]),
        bind("", "", &[1], &[Some(&[0, 0, 0, 0, 0x12, 0, 0, 0])], &[]),
        execute("", 0),
        sync(),
    ]);
    assert_eq!(error_field(&v[1].1, b'C'), "22P03", "{v:?}");
    assert_eq!(error_field(&v[1].1, b'M'), "invalid sign in external \"numeric\" value");
}

#[test]
fn schemas_match_postgres_15() {
    check_script("schemas");
}

#[test]
fn temp_tables_match_postgres_15() {
    check_script("temp_tables");
}

#[test]
fn to_char_to_number_to_date_match_postgres_15() {
    check_script("to_char");
}

#[test]
fn numeric_math_matches_postgres_15() {
    check_script("numeric_math");
}

#[test]
fn uuid_matches_postgres_15() {
    check_script("uuid");
}

#[test]
fn json_matches_postgres_15() {
    check_script("json");
}

#[test]
fn jsonb_matches_postgres_15() {
    check_script("jsonb");
}

/// uuid and jsonb through the extended protocol in binary: a uuid is its 16
/// bytes, a jsonb value is version byte 1 then its text (PostgreSQL 15's
/// uuid_send/jsonb_send); parameters in binary come back in text and binary.
#[test]
fn uuid_and_jsonb_binary_io_use_postgres_wire_format() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let mut r = Raw::connect(srv.port);
    let v = r.send(&[query("CREATE TABLE ub (id uuid PRIMARY KEY, doc jsonb, j json)")]);
    assert_eq!(types(&v), "CZ", "{v:?}");
    let id: [u8; 16] = [0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11];
    let doc = b"\x01{\"b\":[1,2],  \"a\":1}";
    let v = r.send(&[
        parse("ins", "INSERT INTO ub VALUES ($1, $2, $3)", &[2950, 3802, 114]),
        bind("", "ins", &[1, 1, 1], &[Some(&id), Some(doc), Some(b"{\"k\":  1}")], &[]),
        execute("", 0),
        sync(),
    ]);
    assert_eq!(types(&v), "12CZ", "{v:?}");
    let v = r.send(&[parse("sel", "SELECT id, doc, j FROM ub", &[]), bind("", "sel", &[], &[], &[0]), execute("", 0), sync()]);
    assert_eq!(types(&v), "12DCZ", "{v:?}");
    assert_eq!(
        row(&v[2].1),
        vec![Some(b"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11".to_vec()), Some(b"{\"a\": 1, \"b\": [1, 2]}".to_vec()), Some(b"{\"k\":  1}".to_vec())]
    );
    let v = r.send(&[bind("", "sel", &[], &[], &[1]), execute("", 0), sync()]);
    assert_eq!(types(&v), "2DCZ", "{v:?}");
    assert_eq!(row(&v[1].1), vec![Some(id.to_vec()), Some(b"\x01{\"a\": 1, \"b\": [1, 2]}".to_vec()), Some(b"{\"k\":  1}".to_vec())]);
    // Lookup by a binary uuid parameter (through the primary key).
    let v = r.send(&[
        parse("get", "SELECT doc -> 'b' ->> 1 FROM ub WHERE id = $1", &[2950]),
        bind("", "get", &[1], &[Some(&id)], &[0]),
        execute("", 0),
        sync(),
    ]);
    assert_eq!(types(&v), "12DCZ", "{v:?}");
    assert_eq!(row(&v[2].1), vec![Some(b"2".to_vec())]);
    // A wrong jsonb version and a short uuid are errors, as PostgreSQL reports them.
    let v = r.send(&[parse("", "SELECT $1::jsonb", &[3802]), bind("", "", &[1], &[Some(b"\x02{}")], &[]), execute("", 0), sync()]);
    assert_eq!(error_field(&v[1].1, b'C'), "XX000", "{v:?}");
    assert_eq!(error_field(&v[1].1, b'M'), "unsupported jsonb version number 2");
    let v = r.send(&[parse("", "SELECT $1::uuid", &[2950]), bind("", "", &[1], &[Some(&id[..15])], &[]), execute("", 0), sync()]);
    assert_eq!(error_field(&v[1].1, b'C'), "08P01", "{v:?}");
    assert_eq!(error_field(&v[1].1, b'M'), "insufficient data left in message");
}

#[test]
fn databases_match_postgres_15() {
    check_script("databases");
}

#[test]
fn datestyle_and_intervalstyle_output_match_postgres_15() {
    check_script("datestyle");
}

#[test]
fn datetime_input_forms_match_postgres_15() {
    check_script("datetime_input");
}

#[test]
fn interval_and_datetime_functions_match_postgres_15() {
    check_script("interval_fns");
}

#[test]
fn aggregate_order_by_matches_postgres_15() {
    check_script("agg_order");
}

#[test]
fn json_aggregates_match_postgres_15() {
    check_script("json_agg");
}

#[test]
fn row_comparisons_match_postgres_15() {
    check_script("row_compare");
}

#[test]
fn views_match_postgres_15() {
    check_script("views");
}

#[test]
fn view_dml_and_check_option_match_postgres_15() {
    check_script("view_dml");
}

#[test]
fn data_modifying_statements_in_with_match_postgres_15() {
    check_script("with_dml");
}

#[test]
fn sql_functions_match_postgres_15() {
    check_script("sql_functions");
}

#[test]
fn wal_positions_and_stats_match_postgres_15() {
    check_script("wal_stats");
}

/// pg_lsn through the extended protocol in binary (PostgreSQL's pg_lsn_send: the
/// position as a big-endian uint64), and the WAL figures moving as they should:
/// pg_stat_wal counts an insert's records and bytes, pg_stat_reset_shared('wal')
/// starts them again, a synchronous commit is flushed, and pg_walfile_name names a
/// segment file that exists.
#[test]
fn pg_lsn_binary_io_and_wal_statistics_move() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let mut r = Raw::connect(srv.port);
    let lsn = 0x16_B374_D848u64.to_be_bytes();
    let v = r.send(&[parse("l", "SELECT $1::pg_lsn, $1::pg_lsn + 1", &[3220]), bind("", "l", &[1], &[Some(&lsn)], &[0]), execute("", 0), sync()]);
    assert_eq!(types(&v), "12DCZ", "{v:?}");
    assert_eq!(row(&v[2].1), vec![Some(b"16/B374D848".to_vec()), Some(b"16/B374D849".to_vec())]);
    let v = r.send(&[bind("", "l", &[1], &[Some(&lsn)], &[1]), execute("", 0), sync()]);
    assert_eq!(types(&v), "2DCZ", "{v:?}");
    assert_eq!(row(&v[1].1), vec![Some(lsn.to_vec()), Some(0x16_B374_D849u64.to_be_bytes().to_vec())]);
    let v = r.send(&[bind("", "l", &[1], &[Some(&lsn[..7])], &[]), execute("", 0), sync()]);
    assert_eq!(error_field(&v[0].1, b'C'), "08P01", "{v:?}");

    let num = |s: &str| -> Vec<u64> { s.split('|').map(|x| x.trim().parse().unwrap()).collect() };
    srv.sql_ok("CREATE TABLE w (id int, pad text)");
    let before = num(srv.sql_ok("SELECT wal_records, wal_bytes, wal_write FROM pg_stat_wal").trim());
    srv.sql_ok("INSERT INTO w SELECT g, repeat('x', 100) FROM generate_series(1, 100) g");
    let after = num(srv.sql_ok("SELECT wal_records, wal_bytes, wal_write FROM pg_stat_wal").trim());
    assert!(after[0] >= before[0] + 100, "100 rows are at least 100 records: {before:?} -> {after:?}");
    assert!(after[1] >= before[1] + 100 * 100, "and at least their bytes: {before:?} -> {after:?}");
    assert!(after[2] > before[2], "the commit wrote WAL: {before:?} -> {after:?}");
    // A synchronous commit's record is flushed: everything up to a position taken
    // inside the transaction is durable once it commits.
    srv.sql_ok("INSERT INTO w SELECT 0, pg_current_wal_insert_lsn()::text");
    assert_eq!(srv.sql_ok("SELECT pg_current_wal_flush_lsn() > pad::pg_lsn FROM w WHERE id = 0").trim(), "t");
    let seg = srv.sql_ok("SELECT pg_walfile_name(pg_current_wal_insert_lsn())");
    assert!(dir.path().join("data/pg_wal").join(seg.trim()).exists(), "no segment file {seg}");
    // The reset: counts start again, stats_reset moves.
    let reset0 = srv.sql_ok("SELECT stats_reset FROM pg_stat_wal");
    std::thread::sleep(Duration::from_millis(10));
    srv.sql_ok("SELECT pg_stat_reset_shared('wal')");
    let now = num(srv.sql_ok("SELECT wal_records, wal_bytes, wal_write FROM pg_stat_wal").trim());
    assert!(now[0] < after[0] && now[1] < after[1], "reset: {after:?} -> {now:?}");
    assert_eq!(srv.sql_ok(&format!("SELECT stats_reset > '{}' FROM pg_stat_wal", reset0.trim())).trim(), "t");
}

#[test]
fn grouping_sets_match_postgres_15() {
    check_script("grouping_sets");
}

#[test]
fn set_returning_functions_in_from_match_postgres_15() {
    check_script("srf_from");
}
