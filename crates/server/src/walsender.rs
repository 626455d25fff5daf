//! The walsender: the replication command language of a `replication=true` /
//! `replication=database` connection (PostgreSQL's `replication/walsender.c`,
//! `repl_gram.y`, `repl_scanner.l`; "Streaming Replication Protocol" in its
//! documentation). See README.md, "Replication connections".

use crate::connection::{Io, WireSink};
use crate::error::PgError;
use crate::handler::{FieldInfo, Interrupts, Replication, ResultSink, Session, StartupInfo};
use ferrogres_engine::engine::Engine;
use ferrogres_engine::storage::Lsn;
use std::sync::Arc;
use std::time::{Duration, Instant};

const TEXT_OID: u32 = 25;
const INT4_OID: u32 = 23;
const INT8_OID: u32 = 20;
/// The largest XLogData payload (PostgreSQL's MAX_SEND_SIZE: 16 WAL pages).
const MAX_SEND_SIZE: usize = 16 * 8192;
/// How long the streaming loop sleeps when it has nothing to send and the client
/// said nothing, when it has no eventfd latch (the kernel refused one): the delay
/// before new flushed WAL is seen. With the latch, a WAL flush wakes it at once.
const STREAM_POLL: Duration = Duration::from_millis(5);
/// The longest sleep of the streaming loop with a latch (a terminate request
/// also wakes it: the socket is shut down).
const STREAM_IDLE_MAX: Duration = Duration::from_secs(1);
/// Seconds between the Unix epoch and PostgreSQL's (2000-01-01).
const PG_EPOCH_OFFSET_S: u64 = 946_684_800;

/// The walsender state of one replication connection.
pub(crate) struct WalSender {
    engine: Arc<Engine>,
    mode: Replication,
    database: String,
    pid: i32,
    /// Temporary slots this connection created (dropped when it ends).
    temp_slots: Vec<String>,
}

impl Drop for WalSender {
    fn drop(&mut self) {
        for s in std::mem::take(&mut self.temp_slots) {
            let _ = self.engine.slots.drop_slot(&s);
        }
    }
}

/// A replication command (PostgreSQL 15's repl_gram.y, physical side).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Command {
    IdentifySystem,
    Show(String),
    TimelineHistory(u32),
    CreateSlot { name: String, temporary: bool, reserve_wal: bool },
    CreateLogicalSlot,
    DropSlot { name: String },
    ReadSlot(String),
    StartReplication { slot: Option<String>, start: Lsn, timeline: Option<u32> },
    StartLogical,
    BaseBackup(crate::basebackup::Options),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    /// An unquoted word, lower-cased.
    Word(String),
    /// A "quoted" identifier.
    Quoted(String),
    /// A 'string' literal.
    Str(String),
    Num(u64),
    Lsn(Lsn),
    Punct(char),
}

fn syntax_error() -> PgError {
    PgError::error(b"42601", "syntax error")
}

fn tokenize(s: &str) -> Result<Vec<Tok>, PgError> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'-' && b.get(i + 1) == Some(&b'-') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if matches!(c, b'(' | b')' | b',' | b';') {
            out.push(Tok::Punct(c as char));
            i += 1;
        } else if c == b'"' || c == b'\'' {
            let mut v = String::new();
            i += 1;
            loop {
                let Some(&d) = b.get(i) else {
                    return Err(if c == b'"' {
                        PgError::error(b"42601", "unterminated quoted identifier")
                    } else {
                        PgError::error(b"42601", "unterminated quoted string")
                    });
                };
                if d == c {
                    if b.get(i + 1) == Some(&c) {
                        v.push(c as char);
                        i += 2;
                        continue;
                    }
                    i += 1;
                    break;
                }
                let ch = s[i..].chars().next().unwrap_or('\u{fffd}');
                v.push(ch);
                i += ch.len_utf8();
            }
            out.push(if c == b'"' { Tok::Quoted(v) } else { Tok::Str(v) });
        } else {
            let start = i;
            while i < b.len() && !b[i].is_ascii_whitespace() && !matches!(b[i], b'(' | b')' | b',' | b';' | b'"' | b'\'') {
                i += 1;
            }
            let w = &s[start..i];
            if let Some((hi, lo)) = w.split_once('/') {
                let hi = u32::from_str_radix(hi, 16).map_err(|_| syntax_error())?;
                let lo = u32::from_str_radix(lo, 16).map_err(|_| syntax_error())?;
                out.push(Tok::Lsn(Lsn(((hi as u64) << 32) | lo as u64)));
            } else if w.bytes().all(|d| d.is_ascii_digit()) {
                out.push(Tok::Num(w.parse().map_err(|_| syntax_error())?));
            } else {
                out.push(Tok::Word(w.to_ascii_lowercase()));
            }
        }
    }
    while out.last() == Some(&Tok::Punct(';')) {
        out.pop();
    }
    Ok(out)
}

/// The command words that make a string a replication command (PostgreSQL's
/// replication_scanner_is_replication_command); anything else is SQL.
const COMMAND_WORDS: &[&str] = &[
    "identify_system",
    "show",
    "timeline_history",
    "create_replication_slot",
    "drop_replication_slot",
    "read_replication_slot",
    "start_replication",
    "base_backup",
];

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }
    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }
    fn word(&mut self, w: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Word(x)) if x == w) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn ident(&mut self) -> Result<String, PgError> {
        match self.next() {
            Some(Tok::Word(w)) | Some(Tok::Quoted(w)) => Ok(w),
            _ => Err(syntax_error()),
        }
    }
    fn end(&self) -> Result<(), PgError> {
        if self.pos == self.toks.len() {
            Ok(())
        } else {
            Err(syntax_error())
        }
    }
    /// `( name [value] [, ...] )` as (name, value) pairs; values are words,
    /// strings or numbers.
    fn options(&mut self) -> Result<Vec<(String, Option<String>)>, PgError> {
        let mut out = Vec::new();
        if self.peek() != Some(&Tok::Punct('(')) {
            return Ok(out);
        }
        self.pos += 1;
        loop {
            let name = self.ident()?;
            let value = match self.peek() {
                Some(Tok::Word(w)) | Some(Tok::Str(w)) | Some(Tok::Quoted(w)) => {
                    let w = w.clone();
                    self.pos += 1;
                    Some(w)
                }
                Some(Tok::Num(n)) => {
                    let n = *n;
                    self.pos += 1;
                    Some(n.to_string())
                }
                _ => None,
            };
            out.push((name, value));
            match self.next() {
                Some(Tok::Punct(',')) => continue,
                Some(Tok::Punct(')')) => break,
                _ => return Err(syntax_error()),
            }
        }
        Ok(out)
    }
}

/// A boolean option value as PostgreSQL's defGetBoolean reads it (no value: true).
pub(crate) fn bool_option(name: &str, v: &Option<String>) -> Result<bool, PgError> {
    // PostgreSQL's parse_bool: any prefix of true/false/yes/no, on, off, 1, 0.
    let Some(v) = v.as_deref().map(str::to_ascii_lowercase) else { return Ok(true) };
    let prefix_of = |w: &str| !v.is_empty() && w.starts_with(v.as_str());
    if prefix_of("true") || prefix_of("yes") || v == "on" || v == "1" {
        Ok(true)
    } else if prefix_of("false") || prefix_of("no") || (v.len() >= 2 && "off".starts_with(v.as_str())) || v == "0" {
        Ok(false)
    } else {
        Err(PgError::error(b"22023", format!("{name} requires a Boolean value")))
    }
}

/// Parses `sql` as a replication command: `Ok(None)` when it is not one (SQL).
pub(crate) fn parse(sql: &str) -> Result<Option<Command>, PgError> {
    let toks = match tokenize(sql) {
        Ok(t) => t,
        // A string that does not even tokenize as a replication command is SQL
        // unless it starts with a command word.
        Err(e) => {
            let first = sql.split_whitespace().next().unwrap_or("").to_ascii_lowercase();
            return if COMMAND_WORDS.contains(&first.as_str()) { Err(e) } else { Ok(None) };
        }
    };
    let Some(Tok::Word(first)) = toks.first() else { return Ok(None) };
    if !COMMAND_WORDS.contains(&first.as_str()) {
        return Ok(None);
    }
    let first = first.clone();
    let mut p = Parser { toks, pos: 1 };
    let cmd = match first.as_str() {
        "identify_system" => Command::IdentifySystem,
        "show" => {
            // SHOW var_name: a name, possibly dotted (custom settings).
            let mut name = p.ident()?;
            while p.peek() == Some(&Tok::Word(".".into())) {
                p.pos += 1;
                name.push('.');
                name.push_str(&p.ident()?);
            }
            Command::Show(name)
        }
        "timeline_history" => match p.next() {
            Some(Tok::Num(n)) if n > 0 && n <= u32::MAX as u64 => Command::TimelineHistory(n as u32),
            Some(Tok::Num(_)) => return Err(PgError::error(b"42601", "invalid timeline 0")),
            _ => return Err(syntax_error()),
        },
        "create_replication_slot" => {
            let name = p.ident()?;
            let temporary = p.word("temporary");
            if p.word("logical") {
                p.ident()?;
                while p.pos < p.toks.len() {
                    p.pos += 1;
                }
                Command::CreateLogicalSlot
            } else if p.word("physical") {
                let mut reserve_wal = false;
                if p.word("reserve_wal") {
                    reserve_wal = true;
                } else {
                    for (k, v) in p.options()? {
                        match k.as_str() {
                            "reserve_wal" => reserve_wal = bool_option("RESERVE_WAL", &v)?,
                            other => {
                                return Err(PgError::error(b"42601", format!("unrecognized option: {other}")));
                            }
                        }
                    }
                }
                Command::CreateSlot { name, temporary, reserve_wal }
            } else {
                return Err(syntax_error());
            }
        }
        "drop_replication_slot" => {
            let name = p.ident()?;
            // WAIT: wait for an active slot to become free (ours refuse at once).
            p.word("wait");
            Command::DropSlot { name }
        }
        "read_replication_slot" => Command::ReadSlot(p.ident()?),
        "start_replication" => {
            let slot = if p.word("slot") { Some(p.ident()?) } else { None };
            if p.word("logical") {
                return Ok(Some(Command::StartLogical));
            }
            p.word("physical");
            let start = match p.next() {
                Some(Tok::Lsn(l)) => l,
                _ => return Err(syntax_error()),
            };
            let timeline = if p.word("timeline") {
                match p.next() {
                    Some(Tok::Num(n)) if n > 0 && n <= u32::MAX as u64 => Some(n as u32),
                    Some(Tok::Num(_)) => return Err(PgError::error(b"42601", "invalid timeline 0")),
                    _ => return Err(syntax_error()),
                }
            } else {
                None
            };
            Command::StartReplication { slot, start, timeline }
        }
        "base_backup" => Command::BaseBackup(crate::basebackup::Options::parse(p.options()?)?),
        _ => return Ok(None),
    };
    p.end()?;
    Ok(Some(cmd))
}

fn text_field(name: &str) -> FieldInfo {
    FieldInfo { name: name.into(), table_oid: 0, column_id: 0, type_oid: TEXT_OID, type_size: -1, type_modifier: -1, format: 0 }
}

fn int_field(name: &str, oid: u32) -> FieldInfo {
    let size = if oid == INT8_OID { 8 } else { 4 };
    FieldInfo { name: name.into(), table_oid: 0, column_id: 0, type_oid: oid, type_size: size, type_modifier: -1, format: 0 }
}

/// An engine error as the client sees it.
pub(crate) fn engine_error(e: ferrogres_engine::error::Error) -> PgError {
    use ferrogres_engine::error::Error as E;
    let code = e.sqlstate().0;
    match e {
        E::User { message, detail, hint, .. } => {
            let mut p = PgError::error(&code, message);
            p.detail = detail;
            p.hint = hint;
            p
        }
        other => PgError::error(&code, other.to_string()),
    }
}

/// Microseconds since 2000-01-01 00:00 UTC (the protocol's timestamps).
fn pg_now_us() -> i64 {
    let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    d.as_micros() as i64 - (PG_EPOCH_OFFSET_S as i64) * 1_000_000
}

impl WalSender {
    pub(crate) fn new(engine: Arc<Engine>, info: &StartupInfo) -> WalSender {
        WalSender { engine, mode: info.replication, database: info.database.clone(), pid: info.backend_pid, temp_slots: Vec::new() }
    }

    /// Runs `sql` if it is a replication command: `Ok(true)` when it was one
    /// (its results and CommandComplete sent), `Ok(false)` when it is SQL, which
    /// a database walsender runs as an ordinary statement and a physical one
    /// refuses (0A000, PostgreSQL 15's text).
    pub(crate) fn exec(
        &mut self,
        sql: &str,
        io: &mut Io,
        session: &mut dyn Session,
        interrupts: &Interrupts,
    ) -> Result<bool, PgError> {
        let Some(cmd) = parse(sql)? else {
            if self.mode == Replication::Physical {
                return Err(PgError::error(b"0A000", "cannot execute SQL commands in WAL sender for physical replication"));
            }
            return Ok(false);
        };
        let mut sink = WireSink { io, in_execute: false };
        match cmd {
            Command::IdentifySystem => {
                let control = self.engine.wal.control_file();
                let sysid = control.system_identifier.to_string();
                let pos = self.engine.wal.flushed_upto().to_string();
                sink.row_description(&[text_field("systemid"), int_field("timeline", INT4_OID), text_field("xlogpos"), text_field("dbname")])?;
                let tli = ferrogres_engine::wal::layout::TIMELINE.to_string();
                let db = (self.mode == Replication::Database).then_some(self.database.as_bytes());
                sink.data_row(&[Some(sysid.as_bytes()), Some(tli.as_bytes()), Some(pos.as_bytes()), db])?;
                sink.command_complete("IDENTIFY_SYSTEM")?;
            }
            Command::Show(name) => {
                // The session's SHOW: the same value, column name and tag.
                session.execute_simple(&format!("SHOW \"{}\"", name.replace('"', "\"\"")), &mut sink)?;
            }
            Command::TimelineHistory(tli) => {
                // Only timeline 1 exists and it has no history file, as in
                // PostgreSQL before a promotion.
                return Err(PgError::error(
                    b"58P01",
                    format!("could not open file \"pg_wal/{tli:08X}.history\": No such file or directory"),
                ));
            }
            Command::CreateSlot { name, temporary, reserve_wal } => {
                let slot = self.engine.slots.create(&name, reserve_wal).map_err(engine_error)?;
                if temporary {
                    self.temp_slots.push(slot.name.clone());
                }
                sink.row_description(&[
                    text_field("slot_name"),
                    text_field("consistent_point"),
                    text_field("snapshot_name"),
                    text_field("output_plugin"),
                ])?;
                sink.data_row(&[Some(slot.name.as_bytes()), Some(b"0/0"), None, None])?;
                sink.command_complete("CREATE_REPLICATION_SLOT")?;
            }
            Command::CreateLogicalSlot | Command::StartLogical => {
                return Err(PgError::error(b"0A000", "logical replication is not supported by ferrogres"));
            }
            Command::DropSlot { name } => {
                self.engine.slots.drop_slot(&name).map_err(engine_error)?;
                self.temp_slots.retain(|s| *s != name);
                sink.command_complete("DROP_REPLICATION_SLOT")?;
            }
            Command::ReadSlot(name) => {
                sink.row_description(&[text_field("slot_type"), text_field("restart_lsn"), int_field("restart_tli", INT8_OID)])?;
                match self.engine.slots.get(&name) {
                    None => sink.data_row(&[None, None, None])?,
                    Some(s) if s.restart_lsn.0 == 0 => sink.data_row(&[Some(b"physical"), None, None])?,
                    Some(s) => {
                        let lsn = s.restart_lsn.to_string();
                        sink.data_row(&[Some(b"physical"), Some(lsn.as_bytes()), Some(b"1")])?
                    }
                }
                sink.command_complete("READ_REPLICATION_SLOT")?;
            }
            Command::StartReplication { slot, start, timeline } => {
                self.start_replication(io, slot, start, timeline, session, interrupts)?;
            }
            Command::BaseBackup(opts) => {
                crate::basebackup::base_backup(&self.engine, io, opts, self.pid, interrupts)?;
                let mut sink = WireSink { io, in_execute: false };
                sink.command_complete("BASE_BACKUP")?;
            }
        }
        Ok(true)
    }

    /// START_REPLICATION: the CopyBoth stream (see README.md).
    fn start_replication(
        &mut self,
        io: &mut Io,
        slot: Option<String>,
        start: Lsn,
        timeline: Option<u32>,
        session: &mut dyn Session,
        interrupts: &Interrupts,
    ) -> Result<(), PgError> {
        let wal = self.engine.wal.clone();
        if let Some(t) = timeline {
            if t != ferrogres_engine::wal::layout::TIMELINE {
                return Err(PgError::error(b"XX000", format!("requested timeline {t} is not in this server's history")));
            }
        }
        let flushed = wal.flushed_upto();
        if start > flushed {
            return Err(PgError::error(
                b"XX000",
                format!("requested starting point {start} is ahead of the WAL flush position of this server {flushed}"),
            ));
        }
        let slot = match slot {
            Some(name) => {
                self.engine.slots.acquire(&name, self.pid).map_err(engine_error)?;
                Some(SlotHold { engine: self.engine.clone(), name, pid: self.pid })
            }
            None => None,
        };
        // The first segment must still be there (PostgreSQL's 58P01 text).
        let mut probe = [0u8; 1];
        if start < flushed {
            wal.read_flushed(start, &mut probe).map_err(engine_error)?;
        }
        let timeout = session_timeout(session);
        // CopyBothResponse: overall format 0 (text), no columns.
        io.send_raw(b'W', &[0, 0, 0])?;
        io.flush()?;
        let reg = self.engine.walsenders.register(self.pid);
        reg.set_state("streaming");
        // Set at each WAL flush (PostgreSQL's WalSndWakeup); reset before each
        // look at the flushed position, so a flush after the look wakes the
        // sleep below.
        let latch = Arc::new(ferrogres_engine::latch::Latch::new());
        let _watch = FlushWatch::new(&self.engine, &latch);
        let mut pos = start;
        let mut buf = vec![0u8; MAX_SEND_SIZE];
        let mut last_reply = Instant::now();
        let mut ping_sent = false;
        loop {
            if interrupts.terminate_requested() {
                return Err(PgError::admin_shutdown());
            }
            // 1. Whatever the client sent.
            let mut got = false;
            while io.wait_readable(Duration::ZERO) {
                got = true;
                let Some((t, body)) = io.read_message()? else {
                    return Err(PgError::connection_failure("unexpected EOF on standby connection"));
                };
                last_reply = Instant::now();
                ping_sent = false;
                match t {
                    b'd' => match body.first() {
                        Some(b'r') if body.len() >= 34 => {
                            let at = |o: usize| u64::from_be_bytes(body[o..o + 8].try_into().unwrap());
                            let (write, flush, apply) = (Lsn(at(1)), Lsn(at(9)), Lsn(at(17)));
                            let reply_requested = body[33] != 0;
                            reg.set_reply(write, flush, apply, i64::from_be_bytes(body[25..33].try_into().unwrap()));
                            if let Some(s) = &slot {
                                if flush.0 > 0 {
                                    self.engine.slots.advance(&s.name, flush);
                                }
                            }
                            if reply_requested {
                                send_keepalive(io, wal.flushed_upto(), false)?;
                                io.flush()?;
                            }
                        }
                        Some(b'h') => {}
                        _ => return Err(PgError::protocol_fatal(format!("unexpected message type \"{}\"", body.first().map_or('?', |c| *c as char)))),
                    },
                    b'c' => {
                        // CopyDone: ours too, then the command completes.
                        io.send_raw(b'c', &[])?;
                        let mut sink = WireSink { io, in_execute: false };
                        sink.command_complete("START_STREAMING")?;
                        return Ok(());
                    }
                    b'X' => return Err(PgError::connection_failure("client ended the replication stream")),
                    other => {
                        return Err(PgError::protocol_fatal(format!("invalid standby message type \"{}\"", other as char)));
                    }
                }
            }
            // 2. WAL flushed since the last send.
            latch.reset();
            let n = wal.read_flushed(pos, &mut buf).map_err(engine_error)?;
            if n > 0 {
                let end = wal.flushed_upto();
                let mut msg = Vec::with_capacity(25 + n);
                msg.push(b'w');
                msg.extend_from_slice(&pos.0.to_be_bytes());
                msg.extend_from_slice(&end.0.to_be_bytes());
                msg.extend_from_slice(&pg_now_us().to_be_bytes());
                msg.extend_from_slice(&buf[..n]);
                io.send_raw(b'd', &msg)?;
                pos = Lsn(pos.0 + n as u64);
                reg.set_sent(pos);
                if pos >= wal.flushed_upto() {
                    io.flush()?;
                }
                continue;
            }
            io.flush()?;
            // 3. Idle: keepalives and the timeout (PostgreSQL's
            // WalSndKeepaliveIfNecessary and WalSndCheckTimeOut).
            if let Some(t) = timeout {
                let idle = last_reply.elapsed();
                if idle >= t {
                    eprintln!("LOG:  terminating walsender process due to replication timeout");
                    return Err(PgError::connection_failure("terminating walsender process due to replication timeout"));
                }
                if !ping_sent && idle >= t / 2 {
                    send_keepalive(io, wal.flushed_upto(), true)?;
                    io.flush()?;
                    ping_sent = true;
                }
            }
            if !got {
                match latch.fd() {
                    Some(fd) => {
                        // Until WAL is flushed, the client writes, or it is time
                        // for the keepalive / timeout checks above.
                        let mut sleep = STREAM_IDLE_MAX;
                        if let Some(t) = timeout {
                            let idle = last_reply.elapsed();
                            let next = if ping_sent { t } else { t / 2 };
                            sleep = sleep.min(next.saturating_sub(idle).max(Duration::from_millis(1)));
                        }
                        io.wait_readable_or(fd, Some(sleep));
                    }
                    None => {
                        io.wait_readable(STREAM_POLL);
                    }
                }
            }
        }
    }
}

/// A walsender's latch registered with the WAL's flush wake-ups while it streams.
struct FlushWatch {
    engine: Arc<Engine>,
    latch: Arc<ferrogres_engine::latch::Latch>,
}

impl FlushWatch {
    fn new(engine: &Arc<Engine>, latch: &Arc<ferrogres_engine::latch::Latch>) -> FlushWatch {
        engine.wal.watch_flush(latch);
        FlushWatch { engine: engine.clone(), latch: latch.clone() }
    }
}

impl Drop for FlushWatch {
    fn drop(&mut self) {
        self.engine.wal.unwatch_flush(&self.latch);
    }
}

/// Releases an acquired slot however streaming ends.
struct SlotHold {
    engine: Arc<Engine>,
    name: String,
    pid: i32,
}

impl Drop for SlotHold {
    fn drop(&mut self) {
        self.engine.slots.release(&self.name, self.pid);
    }
}

fn send_keepalive(io: &mut Io, end: Lsn, reply: bool) -> Result<(), PgError> {
    let mut msg = Vec::with_capacity(18);
    msg.push(b'k');
    msg.extend_from_slice(&end.0.to_be_bytes());
    msg.extend_from_slice(&pg_now_us().to_be_bytes());
    msg.push(reply as u8);
    io.send_raw(b'd', &msg)
}

/// The session's wal_sender_timeout (`None`: 0, off).
fn session_timeout(session: &mut dyn Session) -> Option<Duration> {
    struct Capture(Option<String>);
    impl ResultSink for Capture {
        fn row_description(&mut self, _: &[FieldInfo]) -> Result<(), PgError> {
            Ok(())
        }
        fn data_row(&mut self, v: &[Option<&[u8]>]) -> Result<(), PgError> {
            self.0 = v.first().copied().flatten().map(|b| String::from_utf8_lossy(b).into_owned());
            Ok(())
        }
        fn command_complete(&mut self, _: &str) -> Result<(), PgError> {
            Ok(())
        }
        fn empty_query(&mut self) -> Result<(), PgError> {
            Ok(())
        }
        fn notice(&mut self, _: &PgError) -> Result<(), PgError> {
            Ok(())
        }
        fn copy_in_start(&mut self, _: i8, _: &[i16]) -> Result<(), PgError> {
            Err(PgError::internal("no COPY here"))
        }
        fn copy_in_read(&mut self) -> Result<crate::handler::CopyInEvent, PgError> {
            Err(PgError::internal("no COPY here"))
        }
        fn copy_out_start(&mut self, _: i8, _: &[i16]) -> Result<(), PgError> {
            Err(PgError::internal("no COPY here"))
        }
        fn copy_data(&mut self, _: &[u8]) -> Result<(), PgError> {
            Ok(())
        }
        fn copy_done(&mut self) -> Result<(), PgError> {
            Ok(())
        }
    }
    let mut c = Capture(None);
    session.execute_simple("SELECT current_setting('wal_sender_timeout')", &mut c).ok()?;
    let v = c.0?;
    let ms = parse_ms(&v)?;
    (ms > 0).then(|| Duration::from_millis(ms))
}

/// "60s", "1min", "500ms", "0" as milliseconds.
fn parse_ms(v: &str) -> Option<u64> {
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let n: u64 = v[..split].parse().ok()?;
    let mult = match v[split..].trim() {
        "" | "ms" => 1,
        "s" => 1000,
        "min" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return None,
    };
    Some(n * mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_postgresql_15_commands() {
        assert_eq!(parse("IDENTIFY_SYSTEM;").unwrap(), Some(Command::IdentifySystem));
        assert_eq!(parse("select 1").unwrap(), None);
        assert_eq!(parse("FOO").unwrap(), None);
        assert_eq!(parse("SHOW wal_segment_size").unwrap(), Some(Command::Show("wal_segment_size".into())));
        assert_eq!(
            parse("CREATE_REPLICATION_SLOT \"s\" TEMPORARY PHYSICAL (RESERVE_WAL)").unwrap(),
            Some(Command::CreateSlot { name: "s".into(), temporary: true, reserve_wal: true })
        );
        assert_eq!(
            parse("create_replication_slot S1 physical reserve_wal").unwrap(),
            Some(Command::CreateSlot { name: "s1".into(), temporary: false, reserve_wal: true })
        );
        assert_eq!(
            parse("START_REPLICATION SLOT \"x\" PHYSICAL 1/2A000000 TIMELINE 1").unwrap(),
            Some(Command::StartReplication { slot: Some("x".into()), start: Lsn(0x1_2A00_0000), timeline: Some(1) })
        );
        assert_eq!(
            parse("START_REPLICATION 0/0").unwrap(),
            Some(Command::StartReplication { slot: None, start: Lsn(0), timeline: None })
        );
        assert_eq!(parse("READ_REPLICATION_SLOT").unwrap_err().code, *b"42601");
        assert_eq!(parse("IDENTIFY_SYSTEM x").unwrap_err().code, *b"42601");
        assert_eq!(parse("DROP_REPLICATION_SLOT s WAIT").unwrap(), Some(Command::DropSlot { name: "s".into() }));
    }

    #[test]
    fn timeouts_in_ms() {
        assert_eq!(parse_ms("1min"), Some(60_000));
        assert_eq!(parse_ms("500ms"), Some(500));
        assert_eq!(parse_ms("0"), Some(0));
    }
}
