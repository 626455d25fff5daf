//! int2vector and oidvector (issue 22): the types of pg_index.indkey, indclass,
//! indcollation, indoption and pg_proc.proargtypes, as drivers and ORMs read
//! them (SQLAlchemy unnests indkey and indclass and calls generate_subscripts on
//! them; pgjdbc expands them with information_schema._pg_expandarray). Every
//! statement runs through psql against ferrogres and against a real PostgreSQL
//! 15, and the transcripts (rows, or SQLSTATE, message, DETAIL and HINT) must be
//! equal; a few values are also checked literally. Binary input goes through a
//! raw Bind to both servers.

mod common;
use common::client::Client;
use common::pg15::Pg15;
use common::server::Server;
use std::process::Command;

/// Each statement's transcript: its rows (`-At`), or its error at verbosity
/// verbose without the LOCATION line (PostgreSQL's source file and line).
fn transcript(mut psql: impl FnMut() -> Command, statements: &[&str]) -> Vec<String> {
    statements
        .iter()
        .map(|sql| {
            let out = psql().args(["-At", "-v", "VERBOSITY=verbose", "-v", "ON_ERROR_STOP=0", "-c", sql]).output().unwrap();
            let err: Vec<String> = String::from_utf8_lossy(&out.stderr).lines().filter(|l| !l.starts_with("LOCATION:")).map(str::to_string).collect();
            format!("{sql}\n{}{}", String::from_utf8_lossy(&out.stdout), err.join("\n"))
        })
        .collect()
}

const SETUP: &[&str] = &[
    "CREATE TABLE ix (k serial PRIMARY KEY, v varchar(10) NOT NULL UNIQUE, w int, n name, b bool)",
    "CREATE INDEX ix_vw ON ix (v DESC, w)",
    "CREATE INDEX ix_nb ON ix (n, b NULLS FIRST)",
    "CREATE INDEX ix_w_hash ON ix USING hash (w)",
];

const STATEMENTS: &[&str] = &[
    // Text input and output, subscripts from 0, slices as arrays from 1.
    "SELECT '1 2'::int2vector, ('1 2'::int2vector)[0], ('1 2'::int2vector)[1], ('1 2'::int2vector)[2]",
    "SELECT ''::int2vector, '  3  4 '::int2vector, '-1 2'::oidvector",
    "SELECT ('1 2'::int2vector)[1:2], ('5 6 7'::oidvector)[0:1]",
    "SELECT pg_typeof(('1 2'::int2vector)[0]), pg_typeof(('1 2'::oidvector)[0]), array_lower('1 2'::int2vector, 1), array_upper('1 2'::int2vector, 1), array_length('1 2'::oidvector, 1)",
    "SELECT '1 2'::int2vector::text, '1 2'::text::int2vector, array_to_string('1 2'::int2vector, ',')",
    // Input errors: the element type's messages.
    "SELECT '1 x'::int2vector",
    "SELECT '1 70000'::int2vector",
    "SELECT '1,2'::int2vector",
    "SELECT 'a'::oidvector",
    // Casts: to arrays (keeping the lower bound 0), none from arrays.
    "SELECT '1 2'::int2vector::int2[], '3 4'::oidvector::oid[], '1 2'::int2vector::int4[]",
    "SELECT '{1,2}'::int2[]::int2vector",
    "SELECT '{1,2}'::int4[]::int2vector",
    "SELECT '{1,2}'::int2[] = '1 2'::int2vector",
    // unnest, generate_subscripts, = ANY, equality, _pg_expandarray.
    "SELECT unnest('5 6'::int2vector), generate_subscripts('5 6'::int2vector, 1)",
    "SELECT generate_subscripts('5 6 7'::oidvector, 1, true)",
    "SELECT * FROM unnest('5 6'::oidvector)",
    "SELECT * FROM generate_subscripts('5 6'::int2vector, 1)",
    "SELECT 6 = ANY ('5 6'::int2vector), 7 = ANY ('5 6'::int2vector), '1 2'::int2vector = '1 2'::int2vector, '1 2'::int2vector = '2 1'::int2vector",
    "SELECT * FROM information_schema._pg_expandarray('7 8'::int2vector)",
    "SELECT unnest(5)",
    "SELECT generate_subscripts(5, 1)",
    // pg_type's rows.
    "SELECT oid, typname, typelem, typarray, typcategory, typinput, typoutput, typreceive, typsend, typsubscript, typlen, typbyval, typalign, typstorage FROM pg_type WHERE oid IN (22, 30, 1006, 1013) ORDER BY oid",
    "SELECT format_type(22, -1), format_type(30, -1), format_type(1006, -1), format_type(1013, -1)",
    // pg_index of the indexes made above, read as the drivers read it.
    "SELECT c.relname, i.indkey, i.indclass, i.indcollation, i.indoption, pg_typeof(i.indkey), pg_typeof(i.indclass) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'ix'::regclass ORDER BY 1",
    "SELECT c.relname, i.indkey[0], i.indoption[0], i.indclass[1] FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'ix'::regclass ORDER BY 1",
    "SELECT c.relname, unnest(i.indkey) AS attnum, unnest(i.indclass)::bigint AS opclass, generate_subscripts(i.indkey, 1) AS ord FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'ix'::regclass ORDER BY 1, 4",
    "SELECT c.relname, a.attname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey) WHERE i.indrelid = 'ix'::regclass ORDER BY 1, 2",
    // The default operator classes of the index columns above.
    "SELECT o.opcname, o.opcmethod, o.opcfamily, o.opcintype::regtype::text, o.opcdefault, o.opckeytype FROM pg_opclass o WHERE o.oid IN (SELECT unnest(indclass) FROM pg_index WHERE indrelid = 'ix'::regclass) ORDER BY 1, 2",
    // The only table access method is heap.
    "SHOW default_table_access_method",
    "SET default_table_access_method = 'foo'",
    "SET default_table_access_method = 'btree'",
    "SET default_table_access_method = ''",
];

#[test]
fn int2vector_and_oidvector_as_postgres() {
    let fg = Server::start_temp(&[]);
    let pg_dir = tempfile::tempdir().unwrap();
    let pg = Pg15::start(&pg_dir.path().join("pg"));
    let fg_psql = || fg.psql_cmd();
    let pg_psql = || {
        let mut c = pg.cmd("psql");
        c.args(["-X", "-d", "postgres"]);
        c
    };
    for (name, sql) in [("ferrogres", SETUP), ("PostgreSQL", SETUP)].iter().map(|(n, s)| (*n, *s)) {
        for s in sql {
            let out = if name == "ferrogres" { fg_psql() } else { pg_psql() }.args(["-v", "ON_ERROR_STOP=1", "-c", s]).output().unwrap();
            assert!(out.status.success(), "{name}: {s}: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
    let got = transcript(fg_psql, STATEMENTS);
    let want = transcript(pg_psql, STATEMENTS);
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g, w, "ferrogres (left) and PostgreSQL 15 (right) differ");
    }
    // A few values literally, so that the comparison cannot pass on two equal mistakes.
    assert!(got[0].ends_with("1 2|1|2|\n"), "{}", got[0]);
    assert!(got[9].contains("[0:1]={1,2}|[0:1]={3,4}|[0:1]={1,2}"), "{}", got[9]);
    assert!(got[13].ends_with("5|0\n6|1\n"), "{}", got[13]);
    assert!(got[18].ends_with("7|1\n8|2\n"), "{}", got[18]);
    assert!(got[23].contains("ix_vw|2 3|3126 1978|100 0|3 0|int2vector|oidvector"), "{}", got[23]);
    assert!(got[23].contains("ix_w_hash|3|10020|0|0|int2vector|oidvector"), "{}", got[23]);
    assert!(got[29].contains("ERROR:  22023: invalid value for parameter \"default_table_access_method\": \"foo\""), "{}", got[29]);
}

/// int2vectorrecv / oidvectorrecv: array_recv's format with one dimension from
/// 0 and no NULLs (not empty either); anything else is 22P03 "invalid
/// int2vector data".
#[test]
fn int2vector_binary_input_as_postgres() {
    let fg = Server::start_temp(&[]);
    let pg_dir = tempfile::tempdir().unwrap();
    let pg = Pg15::start(&pg_dir.path().join("pg"));
    let arr = |ndim: i32, flags: i32, oid: i32, dims: &[(i32, i32)], elems: &[Option<&[u8]>]| -> Vec<u8> {
        let mut b: Vec<u8> = [ndim, flags, oid].iter().flat_map(|x| x.to_be_bytes()).collect();
        for (d, lb) in dims {
            b.extend(d.to_be_bytes());
            b.extend(lb.to_be_bytes());
        }
        for e in elems {
            match e {
                Some(x) => {
                    b.extend((x.len() as i32).to_be_bytes());
                    b.extend_from_slice(x);
                }
                None => b.extend((-1i32).to_be_bytes()),
            }
        }
        b
    };
    let (one, two) = (1i16.to_be_bytes(), 2i16.to_be_bytes());
    let cases: Vec<(&str, u32, Vec<u8>)> = vec![
        ("select $1::int2vector", 22, arr(1, 0, 21, &[(2, 0)], &[Some(&one), Some(&two)])),
        ("select $1::int2vector", 22, arr(1, 0, 21, &[(0, 0)], &[])),
        ("select $1::int2vector", 22, arr(1, 0, 21, &[(2, 1)], &[Some(&one), Some(&two)])),
        ("select $1::int2vector", 22, arr(1, 1, 21, &[(2, 0)], &[Some(&one), None])),
        ("select $1::int2vector", 22, arr(0, 0, 21, &[], &[])),
        ("select $1::int2vector", 22, arr(1, 0, 23, &[(1, 0)], &[Some(&5i32.to_be_bytes())])),
        ("select $1::oidvector", 30, arr(1, 0, 26, &[(1, 0)], &[Some(&7u32.to_be_bytes())])),
        ("select $1::oidvector", 30, arr(1, 0, 26, &[(1, 5)], &[Some(&7u32.to_be_bytes())])),
    ];
    let mut fc = Client::connect(fg.port);
    let mut pc = Client::connect(pg.port);
    for (sql, oid, bytes) in &cases {
        let g = fc.bind_binary(sql, &[*oid], &[Some(bytes)]);
        let w = pc.bind_binary(sql, &[*oid], &[Some(bytes)]);
        let show = |r: &common::client::Reply| match &r.error {
            Some(_) => format!("{:?}", r.err()),
            None => format!("{:?}", r.rows),
        };
        assert_eq!(show(&g), show(&w), "{sql} with {bytes:?}: ferrogres (left) and PostgreSQL 15 (right) differ");
    }
    let g = fc.bind_binary("select $1::int2vector", &[22], &[Some(&cases[2].2)]);
    assert_eq!(g.err(), ("22P03".to_string(), "invalid int2vector data".to_string()));
    assert_eq!(fc.query("select 1").one(), "1", "the session goes on");
}
