//! tokio-postgres: binary results and parameters, portals read in chunks,
//! binary and text COPY, cancel, LISTEN/NOTIFY through the connection's
//! asynchronous messages.

use crate::{out, Target};
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use std::error::Error;
use tokio_postgres::binary_copy::{BinaryCopyInWriter, BinaryCopyOutStream};
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{AsyncMessage, Client, NoTls};

type R<T> = Result<T, Box<dyn Error>>;

/// An error as the transcript shows it: SQLSTATE, message and every field.
fn err_line(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(d) => format!(
            "{} {:?} detail={:?} hint={:?} schema={:?} table={:?} column={:?} constraint={:?} datatype={:?}",
            d.code().code(),
            d.message(),
            d.detail(),
            d.hint(),
            d.schema(),
            d.table(),
            d.column(),
            d.constraint(),
            d.datatype()
        ),
        None => format!("not a server error: {e}"),
    }
}

/// Connects, spawning the connection's task; notifications go to `notes`.
async fn connect(conf: &str, notes: Option<tokio::sync::mpsc::UnboundedSender<String>>) -> R<Client> {
    let (client, mut conn) = tokio_postgres::connect(conf, NoTls).await?;
    tokio::spawn(async move {
        while let Some(m) = std::future::poll_fn(|cx| conn.poll_message(cx)).await {
            match m {
                Ok(AsyncMessage::Notification(n)) => {
                    if let Some(tx) = &notes {
                        let _ = tx.send(format!("{} {}", n.channel(), n.payload()));
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    eprintln!("connection error: {e}");
                    return;
                }
            }
        }
    });
    Ok(client)
}

pub async fn run(t: &Target) -> R<()> {
    let tcp = format!("host={} port={} user={} dbname={}", t.host, t.port, t.user, t.db);

    // 1. Connect over TCP and the unix socket.
    let c = connect(&tcp, None).await?;
    let two: i32 = c.query_one("SELECT 1 + 1", &[]).await?.get(0);
    out!("tcp {two}");
    drop(c);
    let c = connect(&format!("host={} port={} user={} dbname={}", t.sockdir, t.port, t.user, t.db), None).await?;
    let s: String = c.query_one("SELECT 'socket'", &[]).await?.get(0);
    out!("unix {s}");
    drop(c);

    let (ntx, mut nrx) = tokio::sync::mpsc::unbounded_channel();
    let client = connect(&tcp, Some(ntx)).await?;
    client.batch_execute("SET TimeZone = 'UTC'").await?;

    // 2. Round trip of the common types, binary parameters and results.
    client
        .batch_execute(
            "CREATE TABLE types (id int PRIMARY KEY, i2 int2, i4 int4, i8 int8, f4 float4, f8 float8, t text,
             vc varchar(20), b bool, by bytea, d date, tm time, ts timestamp, tstz timestamptz, u uuid,
             j json, jb jsonb, ia int4[], ta text[], n numeric, iv interval)",
        )
        .await?;
    let date = chrono::NaiveDate::from_ymd_opt(2024, 2, 29).unwrap();
    let time = chrono::NaiveTime::from_hms_micro_opt(13, 14, 15, 123456).unwrap();
    let ts = chrono::NaiveDate::from_ymd_opt(2024, 1, 2).unwrap().and_hms_micro_opt(3, 4, 5, 678000).unwrap();
    let tstz = chrono::DateTime::<chrono::Utc>::from_naive_utc_and_offset(ts, chrono::Utc);
    let u = uuid::Uuid::parse_str("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")?;
    let j = serde_json::json!({"a": 1, "list": [true, null]});
    let params: [&(dyn ToSql + Sync); 19] = [
        &1i32,
        &12i16,
        &-345678i32,
        &9007199254740993i64,
        &1.5f32,
        &-2.25f64,
        &"héllo wörld",
        &"varchar",
        &true,
        &vec![0u8, 1, 0xfe, 0xff],
        &date,
        &time,
        &ts,
        &tstz,
        &u,
        &j,
        &j,
        &vec![Some(1i32), None, Some(3)],
        &vec!["x", "y z", ""],
    ];
    let n = client
        .execute(
            "INSERT INTO types VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19,
             '12345.678900', '3 days 04:05:06')",
            &params,
        )
        .await?;
    out!("insert {n}");
    client.execute("INSERT INTO types (id) VALUES (2)", &[]).await?;
    let rows = client.query("SELECT * FROM types ORDER BY id", &[]).await?;
    let cols: Vec<String> = rows[0].columns().iter().map(|c| format!("{}:{}", c.name(), c.type_().name())).collect();
    out!("columns {}", cols.join(" "));
    for r in &rows {
        let id: i32 = r.get("id");
        out!(
            "row {id} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
            r.get::<_, Option<i16>>("i2"),
            r.get::<_, Option<i32>>("i4"),
            r.get::<_, Option<i64>>("i8"),
            r.get::<_, Option<f32>>("f4"),
            r.get::<_, Option<f64>>("f8"),
            r.get::<_, Option<String>>("t"),
            r.get::<_, Option<String>>("vc"),
            r.get::<_, Option<bool>>("b"),
            r.get::<_, Option<Vec<u8>>>("by"),
            r.get::<_, Option<chrono::NaiveDate>>("d"),
        );
        out!(
            "row {id} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
            r.get::<_, Option<chrono::NaiveTime>>("tm"),
            r.get::<_, Option<chrono::NaiveDateTime>>("ts"),
            r.get::<_, Option<chrono::DateTime<chrono::Utc>>>("tstz"),
            r.get::<_, Option<uuid::Uuid>>("u"),
            r.get::<_, Option<serde_json::Value>>("j"),
            r.get::<_, Option<serde_json::Value>>("jb"),
            r.get::<_, Option<Vec<Option<i32>>>>("ia"),
            r.get::<_, Option<Vec<String>>>("ta"),
        );
    }
    // numeric and interval have no Rust type in tokio-postgres: read as text.
    let r = client.query_one("SELECT n::text, iv::text FROM types WHERE id = 1", &[]).await?;
    out!("text casts {} {}", r.get::<_, String>(0), r.get::<_, String>(1));
    let r = client.query_one("SELECT $1::int8 + 1, $2::text || '!', $3::float8[]", &[&41i64, &"hey", &vec![0.5f64, -1.0]]).await?;
    out!("params {} {} {:?}", r.get::<_, i64>(0), r.get::<_, String>(1), r.get::<_, Vec<f64>>(2));
    let stmt = client.prepare_typed("SELECT $1 + 1", &[Type::INT4]).await?;
    out!("prepared {:?} {:?}", stmt.params(), stmt.columns().iter().map(|c| c.type_().name()).collect::<Vec<_>>());
    out!("null param {:?}", client.query_one(&stmt, &[&None::<i32>]).await?.get::<_, Option<i32>>(0));

    // 3. Transactions and savepoints.
    let mut client = client;
    client.batch_execute("CREATE TABLE tx (v int)").await?;
    {
        let mut tx = client.transaction().await?;
        tx.execute("INSERT INTO tx VALUES (1)", &[]).await?;
        {
            let sp = tx.savepoint("sp1").await?;
            sp.execute("INSERT INTO tx VALUES (2)", &[]).await?;
            sp.rollback().await?;
        }
        tx.execute("INSERT INTO tx VALUES (3)", &[]).await?;
        tx.commit().await?;
    }
    {
        let tx = client.build_transaction().read_only(true).isolation_level(tokio_postgres::IsolationLevel::RepeatableRead).start().await?;
        let e = tx.execute("INSERT INTO tx VALUES (4)", &[]).await.expect_err("read only");
        out!("read only: {}", err_line(&e));
        tx.rollback().await?;
    }
    let agg: Vec<i32> = client.query_one("SELECT array_agg(v ORDER BY v) FROM tx", &[]).await?.get(0);
    out!("tx {agg:?}");

    // 4. Constraint errors with their fields; the session goes on.
    client
        .batch_execute(
            "CREATE TABLE parent (id int PRIMARY KEY, name text UNIQUE);
             CREATE TABLE child (id int PRIMARY KEY, pid int REFERENCES parent(id),
               qty int CONSTRAINT qty_positive CHECK (qty > 0), note text NOT NULL);
             INSERT INTO parent VALUES (1, 'one')",
        )
        .await?;
    let ins = "INSERT INTO child VALUES ($1, $2, $3, $4)";
    let cases: [(&str, Vec<&(dyn ToSql + Sync)>); 5] = [
        ("INSERT INTO parent VALUES ($1, $2)", vec![&1i32, &"uno"]),
        (ins, vec![&1i32, &99i32, &1i32, &"n"]),
        (ins, vec![&1i32, &1i32, &0i32, &"n"]),
        (ins, vec![&1i32, &1i32, &1i32, &None::<&str>]),
        ("SELECT 1/$1::int", vec![&0i32]),
    ];
    for (q, p) in cases {
        let e = client.execute(q, &p).await.expect_err("a constraint error");
        out!("error {}", err_line(&e));
    }
    let cnt: i64 = client.query_one("SELECT count(*) FROM parent", &[]).await?.get(0);
    out!("still usable {cnt}");

    // 5. A 10,000-row result.
    let rows = client.query("SELECT g, md5(g::text) FROM generate_series(1, 10000) g", &[]).await?;
    let total: i64 = rows.iter().map(|r| r.get::<_, i32>(0) as i64).sum();
    out!("rows {} {total} {}", rows.len(), rows.last().unwrap().get::<_, String>(1));

    // 6. A portal read in chunks (Execute with a row limit), and DECLARE/FETCH.
    {
        let tx = client.transaction().await?;
        let stmt = tx.prepare("SELECT g FROM generate_series(1, 2500) g").await?;
        let portal = tx.bind(&stmt, &[]).await?;
        let mut sizes = Vec::new();
        loop {
            let chunk = tx.query_portal(&portal, 1000).await?;
            if chunk.is_empty() {
                break;
            }
            sizes.push(format!("{}:{}-{}", chunk.len(), chunk[0].get::<_, i32>(0), chunk.last().unwrap().get::<_, i32>(0)));
        }
        out!("portal {}", sizes.join(" "));
        tx.batch_execute("DECLARE chunks CURSOR FOR SELECT g FROM generate_series(1, 1500) g").await?;
        let mut sizes = Vec::new();
        loop {
            let chunk = tx.query("FETCH 1000 FROM chunks", &[]).await?;
            if chunk.is_empty() {
                break;
            }
            sizes.push(format!("{}:{}-{}", chunk.len(), chunk[0].get::<_, i32>(0), chunk.last().unwrap().get::<_, i32>(0)));
        }
        out!("cursor {}", sizes.join(" "));
        tx.commit().await?;
    }

    // 7. COPY in and out: text, then binary (binary_copy).
    client.batch_execute("CREATE TABLE cp (a int, b text, c float8)").await?;
    let sink = client.copy_in("COPY cp FROM STDIN").await?;
    let mut sink = std::pin::pin!(sink);
    sink.send(Bytes::from_static(b"1\tone\t1.5\n2\t\\N\t2\n3\tthree\\ttab\t\\N\n")).await?;
    out!("copy in {}", sink.finish().await?);
    let stream = client.copy_out("COPY (SELECT * FROM cp ORDER BY a) TO STDOUT WITH (FORMAT csv)").await?;
    let mut stream = std::pin::pin!(stream);
    let mut data = Vec::new();
    while let Some(chunk) = stream.next().await {
        data.extend_from_slice(&chunk?);
    }
    out!("copy out {:?}", String::from_utf8_lossy(&data));
    let sink = client.copy_in("COPY cp (a, b, c) FROM STDIN (FORMAT binary)").await?;
    let writer = BinaryCopyInWriter::new(sink, &[Type::INT4, Type::TEXT, Type::FLOAT8]);
    let mut writer = std::pin::pin!(writer);
    writer.as_mut().write(&[&10i32, &"ten", &10.25f64]).await?;
    writer.as_mut().write(&[&11i32, &None::<&str>, &None::<f64>]).await?;
    writer.as_mut().write(&[&12i32, &"", &f64::NEG_INFINITY]).await?;
    out!("binary copy in {}", writer.finish().await?);
    let stream = client.copy_out("COPY (SELECT a, b, c FROM cp WHERE a >= 10 ORDER BY a) TO STDOUT (FORMAT binary)").await?;
    let rows = BinaryCopyOutStream::new(stream, &[Type::INT4, Type::TEXT, Type::FLOAT8]);
    let mut rows = std::pin::pin!(rows);
    while let Some(r) = rows.next().await {
        let r = r?;
        out!("binary copy row {} {:?} {:?}", r.get::<i32>(0), r.get::<Option<String>>(1), r.get::<Option<f64>>(2));
    }
    let sink = client.copy_in("COPY cp FROM STDIN (FORMAT binary)").await?;
    let mut sink = std::pin::pin!(sink);
    sink.send(Bytes::from_static(b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0\0\x00\x03")).await?;
    match sink.finish().await {
        Ok(n) => out!("bad binary copy accepted {n}"),
        Err(e) => out!("bad binary copy {}", err_line(&e)),
    }
    out!("after bad copy {}", client.query_one("SELECT count(*) FROM cp", &[]).await?.get::<_, i64>(0));

    // 8. Cancel of a running pg_sleep, the connection kept.
    let token = client.cancel_token();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        token.cancel_query(NoTls).await
    });
    let e = client.execute("SELECT pg_sleep(20)", &[]).await.expect_err("cancelled");
    canceller.await??;
    out!("cancel {}", err_line(&e));
    out!("after cancel {}", client.query_one("SELECT 'ok'", &[]).await?.get::<_, &str>(0));

    // 9. statement_timeout.
    client.batch_execute("SET statement_timeout = '300ms'").await?;
    let e = client.execute("SELECT pg_sleep(20)", &[]).await.expect_err("timed out");
    out!("timeout {}", err_line(&e));
    client.batch_execute("RESET statement_timeout").await?;

    // 10. LISTEN/NOTIFY between two connections.
    client.batch_execute("LISTEN events").await?;
    let other = connect(&tcp, None).await?;
    other.batch_execute("NOTIFY events, 'hello'").await?;
    other.execute("SELECT pg_notify('events', $1)", &[&"from a function"]).await?;
    for _ in 0..2 {
        // Notifications arrive between queries; a query makes the connection read.
        client.batch_execute("SELECT 1").await?;
        let note = tokio::time::timeout(std::time::Duration::from_secs(10), nrx.recv()).await?.ok_or("connection closed")?;
        out!("notify {note}");
    }
    client.batch_execute("UNLISTEN *").await?;

    // 11. The client's own type lookup: an array of a type it has to introspect.
    let r = client.query_one("SELECT ARRAY['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid], ARRAY[1.5::float4]", &[]).await?;
    out!("arrays {:?} {:?}", r.get::<_, Vec<uuid::Uuid>>(0), r.get::<_, Vec<f32>>(1));
    Ok(())
}
