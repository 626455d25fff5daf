//! Query identifiers (`compute_query_id`) and the normalized statement text
//! pg_stat_statements shows.
//!
//! PostgreSQL jumbles the analyzed Query tree: the node kinds, the objects by
//! OID, and for each constant only its place (its value is left out), so two
//! statements that differ only in their constants share an id. ferrogres
//! hashes the statement's tokens the same way, constants replaced by one
//! marker, and folds in the OIDs of the relations the analysis resolved (so
//! `SELECT * FROM t` means different statements under different search
//! paths, as in PostgreSQL). The hash is ours (FNV-1a over the token kinds
//! and the case-folded identifier, keyword and operator texts); it is
//! computed once per plan and kept with it (the simple-query plan cache, a
//! prepared statement), never per execution.
//!
//! A constant is what PostgreSQL's grammar makes an A_Const: a number, a
//! string (`'x'`, `E'x'`, `B'1'`, `X'1f'`, `U&'x'`), TRUE, FALSE, NULL (not
//! the NULL of `IS [NOT] NULL`), with a leading unary minus; a typed literal
//! (`interval '1 day'`) keeps its type name and loses its string. Not
//! constants, as in PostgreSQL (the analyzer consumes them): the ordinals of
//! `ORDER BY 1, 2` / `GROUP BY 1`, and type modifiers (`::numeric(10,2)`).
//! The normalized text replaces each constant by `$n`, numbered after the
//! statement's own highest parameter, and keeps everything else verbatim
//! (PostgreSQL's generate_normalized_query).
//!
//! Utility statements (DDL, SET, ...) are not jumbled, as in PostgreSQL 15:
//! their id hashes their text, which is shown as written.

use pg_query::protobuf::Token;
use std::sync::Arc;

/// A statement's identity for the statistics: its query id and the text
/// pg_stat_statements shows for it.
#[derive(Debug)]
pub struct QueryIdent {
    pub id: i64,
    pub text: Arc<str>,
    /// A utility statement (pg_stat_statements.track_utility decides).
    pub utility: bool,
    /// For EXPLAIN: the explained statement's query id (EXPLAIN VERBOSE's
    /// "Query Identifier").
    pub explained: Option<i64>,
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// A final mix so that ids spread over the whole int8 range.
fn finish(h: u64) -> i64 {
    let mut x = h;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    // 0 means "no query id" (pg_stat_activity shows NULL).
    match x as i64 {
        0 => 1,
        v => v,
    }
}

/// The statement text PostgreSQL keeps: trailing blanks and semicolons cut.
pub fn clean_text(sql: &str) -> &str {
    sql.trim_start().trim_end_matches(|c: char| c.is_whitespace() || c == ';')
}

/// A utility statement's identity: its text, hashed as written.
pub fn utility(sql: &str) -> QueryIdent {
    let text = clean_text(sql);
    QueryIdent { id: finish(fnv(FNV_OFFSET ^ 0x55, text.as_bytes())), text: Arc::from(text), utility: true, explained: None }
}

/// The statement an `EXPLAIN [ANALYZE] [VERBOSE] | EXPLAIN (options)` text
/// explains: its text after the options.
pub fn explained_text(sql: &str) -> Option<&str> {
    let tokens = pg_query::scan_tokens(sql).ok()?;
    let mut it = tokens.iter().filter(|t| !matches!(tok(t.token), Some(Token::SqlComment | Token::CComment))).peekable();
    if tok(it.next()?.token) != Some(Token::Explain) {
        return None;
    }
    if it.peek().is_some_and(|t| tok(t.token) == Some(Token::Ascii40)) {
        let mut depth = 0;
        for t in it.by_ref() {
            match tok(t.token) {
                Some(Token::Ascii40) => depth += 1,
                Some(Token::Ascii41) => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
        }
    } else {
        while it.peek().is_some_and(|t| matches!(tok(t.token), Some(Token::Analyze | Token::Analyse | Token::Verbose))) {
            it.next();
        }
    }
    let start = it.next()?.start as usize;
    sql.get(start..)
}

fn tok(t: i32) -> Option<Token> {
    Token::try_from(t).ok()
}

fn is_literal(t: Token) -> bool {
    matches!(t, Token::Iconst | Token::Fconst | Token::Sconst | Token::Usconst | Token::Bconst | Token::Xconst | Token::TrueP | Token::FalseP | Token::NullP)
}

/// Tokens after which an Iconst is part of an arithmetic expression rather
/// than an ordinal ("ORDER BY 1 + a").
fn is_operator(t: Token) -> bool {
    matches!(
        t,
        Token::Op | Token::Typecast | Token::Ascii43 | Token::Ascii45 | Token::Ascii42 | Token::Ascii47 | Token::Ascii37 | Token::Ascii60 | Token::Ascii61 | Token::Ascii62 | Token::Ascii94
    )
}

/// An optimizable statement's identity: the jumble of `sql` (one
/// statement's text) and the relations its analysis resolved.
pub fn jumble(sql: &str, rel_oids: impl Iterator<Item = u32>) -> QueryIdent {
    let text = clean_text(sql);
    let Ok(tokens) = pg_query::scan_tokens(text) else { return QueryIdent { utility: false, ..utility(text) } };
    let toks: Vec<(usize, usize, Option<Token>)> = tokens
        .iter()
        .map(|t| (t.start as usize, t.end as usize, tok(t.token)))
        .filter(|t| !matches!(t.2, Some(Token::SqlComment | Token::CComment)))
        .collect();
    let mut h = FNV_OFFSET;
    // Constants as byte ranges of `text`.
    let mut consts: Vec<(usize, usize)> = Vec::new();
    let mut max_param = 0u32;
    let mut depth = 0i32;
    // ORDER/GROUP/PARTITION BY list open at this depth.
    let mut by_list: Option<i32> = None;
    // After `::` or AS: names read of a possible type name (None: not in
    // one); a `(` after one to three of them opens a type modifier.
    let mut type_name: Option<u8> = None;
    let mut typmod_depth: Option<i32> = None;
    let mut i = 0;
    while i < toks.len() {
        let (s, e, t) = toks[i];
        let prev = (i > 0).then(|| toks[i - 1].2).flatten();
        let next = toks.get(i + 1).and_then(|t| t.2);
        match t {
            Some(Token::Ascii40) => {
                depth += 1;
                if type_name.is_some_and(|n| n > 0) {
                    typmod_depth = Some(depth);
                }
                type_name = None;
            }
            Some(Token::Ascii41) => {
                if typmod_depth == Some(depth) {
                    typmod_depth = None;
                }
                if by_list.is_some_and(|d| d >= depth) {
                    by_list = None;
                }
                depth -= 1;
            }
            Some(Token::By) if matches!(prev, Some(Token::Order | Token::GroupP | Token::Partition)) => by_list = Some(depth),
            Some(Token::Limit | Token::Offset | Token::Having | Token::Window | Token::Fetch | Token::For | Token::Union | Token::Intersect | Token::Except | Token::Returning | Token::Ascii59)
                if by_list == Some(depth) =>
            {
                by_list = None
            }
            Some(Token::Param) => {
                if let Ok(n) = text[s + 1..e].parse::<u32>() {
                    max_param = max_param.max(n);
                }
            }
            _ => {}
        }
        if matches!(t, Some(Token::Typecast | Token::As)) {
            type_name = Some(0);
        } else if t != Some(Token::Ascii40) {
            // Names (keywords too: `double precision`, `character varying`,
            // `pg_catalog.varchar`) continue a type name, up to three; anything
            // else ends it.
            let name = t.is_some_and(|t| t == Token::Ident || t == Token::Ascii46 || ((t as i32) > Token::CComment as i32 && !is_literal(t) && !matches!(t, Token::SqlComment | Token::CComment)));
            type_name = match type_name {
                Some(n) if name && n < 3 => Some(n + 1),
                _ => None,
            };
        }
        // A unary minus before a number is part of the constant.
        let unary_minus = t == Some(Token::Ascii45)
            && matches!(next, Some(Token::Iconst | Token::Fconst))
            && !matches!(prev, Some(Token::Ident | Token::Iconst | Token::Fconst | Token::Sconst | Token::Param | Token::Ascii41 | Token::Ascii93));
        if unary_minus {
            consts.push((s, toks[i + 1].1));
            h = fnv(h, b"\x01$");
            i += 2;
            continue;
        }
        let literal = t.is_some_and(is_literal);
        let null_test = t == Some(Token::NullP) && matches!(prev, Some(Token::Is | Token::Not));
        let typmod = typmod_depth.is_some_and(|d| d == depth) && t == Some(Token::Iconst);
        let ordinal = t == Some(Token::Iconst)
            && by_list == Some(depth)
            && matches!(prev, Some(Token::By | Token::Ascii44))
            && !next.is_some_and(is_operator);
        if literal && !null_test && !typmod && !ordinal {
            consts.push((s, e));
            h = fnv(h, b"\x01$");
            i += 1;
            continue;
        }
        // Names and keywords case-folded (quoted identifiers as written).
        let word = &text[s..e];
        h = fnv(h, &(t.map_or(0, |t| t as i32) as u32).to_le_bytes());
        if word.starts_with('"') {
            h = fnv(h, word.as_bytes());
        } else {
            for b in word.bytes() {
                h = fnv(h, &[b.to_ascii_lowercase()]);
            }
        }
        i += 1;
    }
    let mut out = String::with_capacity(text.len() + consts.len() * 2);
    let mut at = 0;
    for (n, &(s, e)) in consts.iter().enumerate() {
        out.push_str(&text[at..s]);
        out.push('$');
        out.push_str(&(max_param as usize + n + 1).to_string());
        at = e;
    }
    out.push_str(&text[at..]);
    // In OID order: the same relations give the same id whatever order the
    // analysis met them in.
    let mut oids: Vec<u32> = rel_oids.collect();
    oids.sort_unstable();
    oids.dedup();
    for oid in oids {
        h = fnv(h, &oid.to_le_bytes());
    }
    QueryIdent { id: finish(h), text: Arc::from(out), utility: false, explained: None }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(sql: &str) -> String {
        jumble(sql, std::iter::empty()).text.to_string()
    }

    fn id(sql: &str) -> i64 {
        jumble(sql, std::iter::empty()).id
    }

    #[test]
    fn constants_become_parameters_as_postgres_prints_them() {
        assert_eq!(norm("select * from t where a = 1 and b = 'x' order by 1, 2 limit 5"), "select * from t where a = $1 and b = $2 order by 1, 2 limit $3");
        assert_eq!(norm("select * from t where a = -7 and b = 'yy' order by 1, 2 limit 10;"), "select * from t where a = $1 and b = $2 order by 1, 2 limit $3");
        assert_eq!(
            norm("select a::numeric(10,2), true, null, interval '1 day' from t where a in (1,2,3) group by 1"),
            "select a::numeric(10,2), $1, $2, interval $3 from t where a in ($4,$5,$6) group by 1"
        );
        assert_eq!(norm("insert into t values (1, 'a', 2.5)"), "insert into t values ($1, $2, $3)");
        assert_eq!(norm("select a - 1 from t where b is not null"), "select a - $1 from t where b is not null");
        assert_eq!(norm("select * from t where a = $1 and b = 'x'"), "select * from t where a = $1 and b = $2");
        assert_eq!(norm("select cast(a as varchar(10)) from t"), "select cast(a as varchar(10)) from t");
    }

    #[test]
    fn same_shape_same_id() {
        assert_eq!(id("select * from t where a = 1"), id("SELECT *   FROM t WHERE a = 42"));
        assert_eq!(id("select * from t where a = 1"), id("select * from t where a = -1"));
        assert_ne!(id("select * from t where a = 1"), id("select * from t where b = 1"));
        assert_ne!(id("select * from t order by 1"), id("select * from t order by 2"));
        assert_ne!(jumble("select * from t", [1u32].into_iter()).id, jumble("select * from t", [2u32].into_iter()).id);
        assert_ne!(id("select 1"), 0);
    }

    #[test]
    fn explained_statement() {
        assert_eq!(explained_text("EXPLAIN VERBOSE select 1"), Some("select 1"));
        assert_eq!(explained_text("explain (verbose, costs off) select (1)"), Some("select (1)"));
        assert_eq!(explained_text("explain analyze verbose select 1"), Some("select 1"));
        assert_eq!(explained_text("select 1"), None);
    }

    #[test]
    fn utility_text_is_kept() {
        let u = utility("SET work_mem = '4MB';  ");
        assert_eq!(&*u.text, "SET work_mem = '4MB'");
        assert_eq!(u.id, utility("SET work_mem = '4MB'").id);
        assert_ne!(u.id, utility("SET work_mem = '8MB'").id);
    }
}
