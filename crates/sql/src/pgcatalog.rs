//! pg_catalog as PostgreSQL 15 shows it: the system catalogs psql and other
//! clients query, with PostgreSQL 15's columns and built-in OIDs, as views
//! computed when a query reads them (`plan::Source::Virtual`, like
//! [`crate::sysviews`]) from the stored catalogs of [`crate::catalog`] and
//! [`crate::index`], read with the statement's snapshot: they are
//! transactional with DDL (a session sees its own uncommitted CREATE TABLE).
//! Catalogs with no objects of ours are empty. The name resolves before the
//! stored catalog of the same name (pg_class, pg_attribute, ... as stored keep
//! their own narrower shape, internal to [`crate::catalog`]).
//!
//! | view | rows |
//! |---|---|
//! | pg_namespace | stored rows, plus pg_toast (99) and information_schema (13207) |
//! | pg_class | stored rows (tables 'r' with relam heap 2, indexes 'i' with btree 403) |
//! | pg_attribute | stored rows (user columns only: no system columns with attnum < 0) |
//! | pg_attrdef | stored defaults; `adbin` holds the expression as pg_get_expr shows it |
//! | pg_index, pg_constraint | stored rows of [`crate::index`] |
//! | pg_sequence | the sequences of pg_class (relkind 'S') with the options of their state files ([`crate::sequence`]) |
//! | pg_type | the built-in types of [`ferrogres_datum::types`] and their array types |
//! | pg_opclass | the default btree and hash operator classes of the built-in types ([`OPCLASSES`], PostgreSQL 15's OIDs); no other classes exist yet |
//! | pg_am | heap 2, btree 403, hash 405, gist 783, gin 2742, spgist 4000, brin 3580 |
//! | pg_database | postgres (5) only: there are no template databases |
//! | pg_authid, pg_shadow (superuser only: 42501), pg_roles, pg_user, pg_auth_members | the stored shared catalogs of [`crate::roles`] |
//! | pg_parameter_acl | the stored shared catalog of [`crate::param_acl`] |
//! | pg_default_acl | the stored catalog of [`crate::default_acl`] |
//! | pg_tablespace | pg_default 1663, pg_global 1664 |
//! | pg_language | internal 12, c 13, sql 14 (no procedural languages) |
//! | pg_collation | default 100, C 950, POSIX 951 |
//! | pg_settings | the session's settings (name, setting, source, boot_val, reset_val; context, vartype, unit, min_val, max_val, enumvals from the table of known settings) |
//! | pg_proc | the SQL functions of [`crate::sqlfunc`] (prosrc: the body as stored; owner and ACL) |
//! | pg_description, pg_shdescription, pg_inherits, pg_range (no range types yet), pg_partitioned_table, pg_trigger, pg_policy, pg_publication, pg_publication_rel, pg_publication_namespace, pg_statistic_ext, pg_foreign_table, pg_rewrite | empty |
//!
//! | information_schema.tables, information_schema.columns | the tables (relkind 'r') and their columns |
//! | information_schema.table_privileges, role_table_grants | the ACL items of tables and views, one row per privilege ([`crate::acl`]) |
//!
//! Functions that read catalogs (pg_get_indexdef, pg_get_constraintdef, the
//! size functions, casts of OIDs to regclass) get an "oid:value" table built at
//! analysis with the statement's snapshot, as a constant argument: the
//! executor's functions see no catalog.
//!
//! Column types PostgreSQL has and we do not are shown as: regproc as text
//! (the function's name), pg_node_tree and anyarray as text, aclitem[] as
//! text[]. int2vector and oidvector columns (pg_index.indkey, indclass,
//! pg_proc.proargtypes, ...) have their own types, subscripted from 0.

use crate::catalog::{self, Column, Table};
use ferrogres_datum::errors::{Result, SqlError};
use crate::rowio::{scan_rows, RelStorage};
use ferrogres_datum::types::{self, Type, Value};
use ferrogres_engine::engine::{Backend, DEFAULT_TABLESPACE_OID};
use ferrogres_engine::storage::RelFileLocator;
use ferrogres_engine::txn::snapshot::Snapshot;

const TEXT_ARRAY: Type = Type::Array(&Type::Text);
const INT2_ARRAY: Type = Type::Array(&Type::Int2);
const OID_ARRAY: Type = Type::Array(&Type::Oid);
const CHAR_ARRAY: Type = Type::Array(&Type::Char);

pub const BOOTSTRAP_SUPERUSER: u32 = 10;
pub const PG_TOAST_NAMESPACE: u32 = 99;
pub const INFORMATION_SCHEMA_NAMESPACE: u32 = 13207;
pub const PG_DATABASE_OWNER: u32 = 6171;
/// pg_language's `sql`.
const SQL_LANGUAGE: u32 = 14;

struct View {
    name: &'static str,
    oid: u32,
    columns: &'static [(&'static str, Type)],
}

static VIEWS: &[View] = &[
    View { name: "pg_am", oid: 2601, columns: &[("oid", Type::Oid), ("amname", Type::Name), ("amhandler", Type::Text), ("amtype", Type::Char)] },
    View { name: "pg_attrdef", oid: 2604, columns: &[("oid", Type::Oid), ("adrelid", Type::Oid), ("adnum", Type::Int2), ("adbin", Type::Text)] },
    View { name: "pg_attribute", oid: 1249, columns: &[("attrelid", Type::Oid), ("attname", Type::Name), ("atttypid", Type::Oid), ("attstattarget", Type::Int4), ("attlen", Type::Int2), ("attnum", Type::Int2), ("attndims", Type::Int4), ("attcacheoff", Type::Int4), ("atttypmod", Type::Int4), ("attbyval", Type::Bool), ("attalign", Type::Char), ("attstorage", Type::Char), ("attcompression", Type::Char), ("attnotnull", Type::Bool), ("atthasdef", Type::Bool), ("atthasmissing", Type::Bool), ("attidentity", Type::Char), ("attgenerated", Type::Char), ("attisdropped", Type::Bool), ("attislocal", Type::Bool), ("attinhcount", Type::Int4), ("attcollation", Type::Oid), ("attacl", TEXT_ARRAY), ("attoptions", TEXT_ARRAY), ("attfdwoptions", TEXT_ARRAY), ("attmissingval", Type::Text)] },
    View { name: "pg_authid", oid: 1260, columns: &[("oid", Type::Oid), ("rolname", Type::Name), ("rolsuper", Type::Bool), ("rolinherit", Type::Bool), ("rolcreaterole", Type::Bool), ("rolcreatedb", Type::Bool), ("rolcanlogin", Type::Bool), ("rolreplication", Type::Bool), ("rolbypassrls", Type::Bool), ("rolconnlimit", Type::Int4), ("rolpassword", Type::Text), ("rolvaliduntil", Type::Timestamptz)] },
    View { name: "pg_class", oid: 1259, columns: &[("oid", Type::Oid), ("relname", Type::Name), ("relnamespace", Type::Oid), ("reltype", Type::Oid), ("reloftype", Type::Oid), ("relowner", Type::Oid), ("relam", Type::Oid), ("relfilenode", Type::Oid), ("reltablespace", Type::Oid), ("relpages", Type::Int4), ("reltuples", Type::Float4), ("relallvisible", Type::Int4), ("reltoastrelid", Type::Oid), ("relhasindex", Type::Bool), ("relisshared", Type::Bool), ("relpersistence", Type::Char), ("relkind", Type::Char), ("relnatts", Type::Int2), ("relchecks", Type::Int2), ("relhasrules", Type::Bool), ("relhastriggers", Type::Bool), ("relhassubclass", Type::Bool), ("relrowsecurity", Type::Bool), ("relforcerowsecurity", Type::Bool), ("relispopulated", Type::Bool), ("relreplident", Type::Char), ("relispartition", Type::Bool), ("relrewrite", Type::Oid), ("relfrozenxid", Type::Xid), ("relminmxid", Type::Xid), ("relacl", TEXT_ARRAY), ("reloptions", TEXT_ARRAY), ("relpartbound", Type::Text)] },
    View { name: "pg_collation", oid: 3456, columns: &[("oid", Type::Oid), ("collname", Type::Name), ("collnamespace", Type::Oid), ("collowner", Type::Oid), ("collprovider", Type::Char), ("collisdeterministic", Type::Bool), ("collencoding", Type::Int4), ("collcollate", Type::Text), ("collctype", Type::Text), ("colliculocale", Type::Text), ("collversion", Type::Text)] },
    View { name: "pg_constraint", oid: 2606, columns: &[("oid", Type::Oid), ("conname", Type::Name), ("connamespace", Type::Oid), ("contype", Type::Char), ("condeferrable", Type::Bool), ("condeferred", Type::Bool), ("convalidated", Type::Bool), ("conrelid", Type::Oid), ("contypid", Type::Oid), ("conindid", Type::Oid), ("conparentid", Type::Oid), ("confrelid", Type::Oid), ("confupdtype", Type::Char), ("confdeltype", Type::Char), ("confmatchtype", Type::Char), ("conislocal", Type::Bool), ("coninhcount", Type::Int4), ("connoinherit", Type::Bool), ("conkey", INT2_ARRAY), ("confkey", INT2_ARRAY), ("conpfeqop", OID_ARRAY), ("conppeqop", OID_ARRAY), ("conffeqop", OID_ARRAY), ("confdelsetcols", INT2_ARRAY), ("conexclop", OID_ARRAY), ("conbin", Type::Text)] },
    View { name: "pg_database", oid: 1262, columns: &[("oid", Type::Oid), ("datname", Type::Name), ("datdba", Type::Oid), ("encoding", Type::Int4), ("datlocprovider", Type::Char), ("datistemplate", Type::Bool), ("datallowconn", Type::Bool), ("datconnlimit", Type::Int4), ("datfrozenxid", Type::Xid), ("datminmxid", Type::Xid), ("dattablespace", Type::Oid), ("datcollate", Type::Text), ("datctype", Type::Text), ("daticulocale", Type::Text), ("datcollversion", Type::Text), ("datacl", TEXT_ARRAY)] },
    View { name: "pg_description", oid: 2609, columns: &[("objoid", Type::Oid), ("classoid", Type::Oid), ("objsubid", Type::Int4), ("description", Type::Text)] },
    View { name: "pg_foreign_table", oid: 3118, columns: &[("ftrelid", Type::Oid), ("ftserver", Type::Oid), ("ftoptions", TEXT_ARRAY)] },
    View { name: "pg_index", oid: 2610, columns: &[("indexrelid", Type::Oid), ("indrelid", Type::Oid), ("indnatts", Type::Int2), ("indnkeyatts", Type::Int2), ("indisunique", Type::Bool), ("indnullsnotdistinct", Type::Bool), ("indisprimary", Type::Bool), ("indisexclusion", Type::Bool), ("indimmediate", Type::Bool), ("indisclustered", Type::Bool), ("indisvalid", Type::Bool), ("indcheckxmin", Type::Bool), ("indisready", Type::Bool), ("indislive", Type::Bool), ("indisreplident", Type::Bool), ("indkey", Type::Int2Vector), ("indcollation", Type::OidVector), ("indclass", Type::OidVector), ("indoption", Type::Int2Vector), ("indexprs", Type::Text), ("indpred", Type::Text)] },
    // Empty until range types exist; regproc columns as text (see above).
    View { name: "pg_range", oid: 3541, columns: &[("rngtypid", Type::Oid), ("rngsubtype", Type::Oid), ("rngmultitypid", Type::Oid), ("rngcollation", Type::Oid), ("rngsubopc", Type::Oid), ("rngcanonical", Type::Text), ("rngsubdiff", Type::Text)] },
    View { name: "pg_sequence", oid: 2224, columns: &[("seqrelid", Type::Oid), ("seqtypid", Type::Oid), ("seqstart", Type::Int8), ("seqincrement", Type::Int8), ("seqmax", Type::Int8), ("seqmin", Type::Int8), ("seqcache", Type::Int8), ("seqcycle", Type::Bool)] },
    View { name: "pg_opclass", oid: 2616, columns: &[("oid", Type::Oid), ("opcmethod", Type::Oid), ("opcname", Type::Name), ("opcnamespace", Type::Oid), ("opcowner", Type::Oid), ("opcfamily", Type::Oid), ("opcintype", Type::Oid), ("opcdefault", Type::Bool), ("opckeytype", Type::Oid)] },
    View { name: "pg_inherits", oid: 2611, columns: &[("inhrelid", Type::Oid), ("inhparent", Type::Oid), ("inhseqno", Type::Int4), ("inhdetachpending", Type::Bool)] },
    View { name: "pg_namespace", oid: 2615, columns: &[("oid", Type::Oid), ("nspname", Type::Name), ("nspowner", Type::Oid), ("nspacl", TEXT_ARRAY)] },
    View { name: "pg_partitioned_table", oid: 3350, columns: &[("partrelid", Type::Oid), ("partstrat", Type::Char), ("partnatts", Type::Int2), ("partdefid", Type::Oid), ("partattrs", Type::Int2Vector), ("partclass", Type::OidVector), ("partcollation", Type::OidVector), ("partexprs", Type::Text)] },
    View { name: "pg_policy", oid: 3256, columns: &[("oid", Type::Oid), ("polname", Type::Name), ("polrelid", Type::Oid), ("polcmd", Type::Char), ("polpermissive", Type::Bool), ("polroles", OID_ARRAY), ("polqual", Type::Text), ("polwithcheck", Type::Text)] },
    View { name: "pg_language", oid: 2612, columns: &[("oid", Type::Oid), ("lanname", Type::Name), ("lanowner", Type::Oid), ("lanispl", Type::Bool), ("lanpltrusted", Type::Bool), ("lanplcallfoid", Type::Oid), ("laninline", Type::Oid), ("lanvalidator", Type::Oid), ("lanacl", TEXT_ARRAY)] },
    View { name: "pg_proc", oid: 1255, columns: &[("oid", Type::Oid), ("proname", Type::Name), ("pronamespace", Type::Oid), ("proowner", Type::Oid), ("prolang", Type::Oid), ("procost", Type::Float4), ("prorows", Type::Float4), ("provariadic", Type::Oid), ("prosupport", Type::Text), ("prokind", Type::Char), ("prosecdef", Type::Bool), ("proleakproof", Type::Bool), ("proisstrict", Type::Bool), ("proretset", Type::Bool), ("provolatile", Type::Char), ("proparallel", Type::Char), ("pronargs", Type::Int2), ("pronargdefaults", Type::Int2), ("prorettype", Type::Oid), ("proargtypes", Type::OidVector), ("proallargtypes", OID_ARRAY), ("proargmodes", CHAR_ARRAY), ("proargnames", TEXT_ARRAY), ("proargdefaults", Type::Text), ("protrftypes", OID_ARRAY), ("prosrc", Type::Text), ("probin", Type::Text), ("prosqlbody", Type::Text), ("proconfig", TEXT_ARRAY), ("proacl", TEXT_ARRAY)] },
    View { name: "pg_publication", oid: 6104, columns: &[("oid", Type::Oid), ("pubname", Type::Name), ("pubowner", Type::Oid), ("puballtables", Type::Bool), ("pubinsert", Type::Bool), ("pubupdate", Type::Bool), ("pubdelete", Type::Bool), ("pubtruncate", Type::Bool), ("pubviaroot", Type::Bool)] },
    View { name: "pg_publication_namespace", oid: 6237, columns: &[("oid", Type::Oid), ("pnpubid", Type::Oid), ("pnnspid", Type::Oid)] },
    View { name: "pg_publication_rel", oid: 6106, columns: &[("oid", Type::Oid), ("prpubid", Type::Oid), ("prrelid", Type::Oid), ("prqual", Type::Text), ("prattrs", INT2_ARRAY)] },
    View { name: "pg_rewrite", oid: 2618, columns: &[("oid", Type::Oid), ("rulename", Type::Name), ("ev_class", Type::Oid), ("ev_type", Type::Char), ("ev_enabled", Type::Char), ("is_instead", Type::Bool), ("ev_qual", Type::Text), ("ev_action", Type::Text)] },
    View { name: "pg_roles", oid: 12000, columns: &[("rolname", Type::Name), ("rolsuper", Type::Bool), ("rolinherit", Type::Bool), ("rolcreaterole", Type::Bool), ("rolcreatedb", Type::Bool), ("rolcanlogin", Type::Bool), ("rolreplication", Type::Bool), ("rolconnlimit", Type::Int4), ("rolpassword", Type::Text), ("rolvaliduntil", Type::Timestamptz), ("rolbypassrls", Type::Bool), ("rolconfig", TEXT_ARRAY), ("oid", Type::Oid)] },
    View { name: "pg_settings", oid: 12104, columns: &[("name", Type::Text), ("setting", Type::Text), ("unit", Type::Text), ("category", Type::Text), ("short_desc", Type::Text), ("extra_desc", Type::Text), ("context", Type::Text), ("vartype", Type::Text), ("source", Type::Text), ("min_val", Type::Text), ("max_val", Type::Text), ("enumvals", TEXT_ARRAY), ("boot_val", Type::Text), ("reset_val", Type::Text), ("sourcefile", Type::Text), ("sourceline", Type::Int4), ("pending_restart", Type::Bool)] },
    View { name: "pg_shdescription", oid: 2396, columns: &[("objoid", Type::Oid), ("classoid", Type::Oid), ("description", Type::Text)] },
    View { name: "pg_stats", oid: 12050, columns: &[("schemaname", Type::Name), ("tablename", Type::Name), ("attname", Type::Name), ("inherited", Type::Bool), ("null_frac", Type::Float4), ("avg_width", Type::Int4), ("n_distinct", Type::Float4), ("most_common_vals", Type::Text), ("most_common_freqs", Type::Text), ("histogram_bounds", Type::Text), ("correlation", Type::Float4), ("most_common_elems", Type::Text), ("most_common_elem_freqs", Type::Text), ("elem_count_histogram", Type::Text)] },
    View { name: "pg_statistic_ext", oid: 3381, columns: &[("oid", Type::Oid), ("stxrelid", Type::Oid), ("stxname", Type::Name), ("stxnamespace", Type::Oid), ("stxowner", Type::Oid), ("stxstattarget", Type::Int4), ("stxkeys", Type::Int2Vector), ("stxkind", CHAR_ARRAY), ("stxexprs", Type::Text)] },
    View { name: "pg_tablespace", oid: 1213, columns: &[("oid", Type::Oid), ("spcname", Type::Name), ("spcowner", Type::Oid), ("spcacl", TEXT_ARRAY), ("spcoptions", TEXT_ARRAY)] },
    View { name: "pg_trigger", oid: 2620, columns: &[("oid", Type::Oid), ("tgrelid", Type::Oid), ("tgparentid", Type::Oid), ("tgname", Type::Name), ("tgfoid", Type::Oid), ("tgtype", Type::Int2), ("tgenabled", Type::Char), ("tgisinternal", Type::Bool), ("tgconstrrelid", Type::Oid), ("tgconstrindid", Type::Oid), ("tgconstraint", Type::Oid), ("tgdeferrable", Type::Bool), ("tginitdeferred", Type::Bool), ("tgnargs", Type::Int2), ("tgattr", Type::Int2Vector), ("tgargs", Type::Bytea), ("tgqual", Type::Text), ("tgoldtable", Type::Name), ("tgnewtable", Type::Name)] },
    View { name: "pg_type", oid: 1247, columns: &[("oid", Type::Oid), ("typname", Type::Name), ("typnamespace", Type::Oid), ("typowner", Type::Oid), ("typlen", Type::Int2), ("typbyval", Type::Bool), ("typtype", Type::Char), ("typcategory", Type::Char), ("typispreferred", Type::Bool), ("typisdefined", Type::Bool), ("typdelim", Type::Char), ("typrelid", Type::Oid), ("typsubscript", Type::Text), ("typelem", Type::Oid), ("typarray", Type::Oid), ("typinput", Type::Text), ("typoutput", Type::Text), ("typreceive", Type::Text), ("typsend", Type::Text), ("typmodin", Type::Text), ("typmodout", Type::Text), ("typanalyze", Type::Text), ("typalign", Type::Char), ("typstorage", Type::Char), ("typnotnull", Type::Bool), ("typbasetype", Type::Oid), ("typtypmod", Type::Int4), ("typndims", Type::Int4), ("typcollation", Type::Oid), ("typdefaultbin", Type::Text), ("typdefault", Type::Text), ("typacl", TEXT_ARRAY)] },
    View { name: "pg_indexes", oid: 12043, columns: &[("schemaname", Type::Name), ("tablename", Type::Name), ("indexname", Type::Name), ("tablespace", Type::Name), ("indexdef", Type::Text)] },
    View { name: "pg_views", oid: 12028, columns: &[("schemaname", Type::Name), ("viewname", Type::Name), ("viewowner", Type::Name), ("definition", Type::Text)] },
    View { name: "pg_shadow", oid: 12010, columns: &[("usename", Type::Name), ("usesysid", Type::Oid), ("usecreatedb", Type::Bool), ("usesuper", Type::Bool), ("userepl", Type::Bool), ("usebypassrls", Type::Bool), ("passwd", Type::Text), ("valuntil", Type::Timestamptz), ("useconfig", TEXT_ARRAY)] },
    View { name: "pg_default_acl", oid: 826, columns: &[("oid", Type::Oid), ("defaclrole", Type::Oid), ("defaclnamespace", Type::Oid), ("defaclobjtype", Type::Char), ("defaclacl", TEXT_ARRAY)] },
    View { name: "pg_parameter_acl", oid: 6243, columns: &[("oid", Type::Oid), ("parname", Type::Text), ("paracl", TEXT_ARRAY)] },
    View { name: "pg_auth_members", oid: 1261, columns: &[("roleid", Type::Oid), ("member", Type::Oid), ("grantor", Type::Oid), ("admin_option", Type::Bool)] },
    View { name: "pg_user", oid: 12014, columns: &[("usename", Type::Name), ("usesysid", Type::Oid), ("usecreatedb", Type::Bool), ("usesuper", Type::Bool), ("userepl", Type::Bool), ("usebypassrls", Type::Bool), ("passwd", Type::Text), ("valuntil", Type::Timestamptz), ("useconfig", TEXT_ARRAY)] },
];

/// information_schema's views (its domains sql_identifier, cardinal_number,
/// character_data and yes_or_no shown as name, int4 and varchar).
static INFORMATION_SCHEMA: &[View] = &[
    View { name: "table_privileges", oid: 13416, columns: TABLE_GRANTS },
    View { name: "role_table_grants", oid: 13421, columns: TABLE_GRANTS },
    View { name: "column_privileges", oid: 13286, columns: &[("grantor", Type::Name), ("grantee", Type::Name), ("table_catalog", Type::Name), ("table_schema", Type::Name), ("table_name", Type::Name), ("column_name", Type::Name), ("privilege_type", Type::Varchar), ("is_grantable", Type::Varchar)] },
    View { name: "tables", oid: 13425, columns: &[("table_catalog", Type::Name), ("table_schema", Type::Name), ("table_name", Type::Name), ("table_type", Type::Varchar), ("self_referencing_column_name", Type::Name), ("reference_generation", Type::Varchar), ("user_defined_type_catalog", Type::Name), ("user_defined_type_schema", Type::Name), ("user_defined_type_name", Type::Name), ("is_insertable_into", Type::Varchar), ("is_typed", Type::Varchar), ("commit_action", Type::Varchar)] },
    View { name: "views", oid: 13483, columns: &[("table_catalog", Type::Name), ("table_schema", Type::Name), ("table_name", Type::Name), ("view_definition", Type::Varchar), ("check_option", Type::Varchar), ("is_updatable", Type::Varchar), ("is_insertable_into", Type::Varchar), ("is_trigger_updatable", Type::Varchar), ("is_trigger_deletable", Type::Varchar), ("is_trigger_insertable_into", Type::Varchar)] },
    View { name: "columns", oid: 13295, columns: &[("table_catalog", Type::Name), ("table_schema", Type::Name), ("table_name", Type::Name), ("column_name", Type::Name), ("ordinal_position", Type::Int4), ("column_default", Type::Varchar), ("is_nullable", Type::Varchar), ("data_type", Type::Varchar), ("character_maximum_length", Type::Int4), ("character_octet_length", Type::Int4), ("numeric_precision", Type::Int4), ("numeric_precision_radix", Type::Int4), ("numeric_scale", Type::Int4), ("datetime_precision", Type::Int4), ("interval_type", Type::Varchar), ("interval_precision", Type::Int4), ("character_set_catalog", Type::Name), ("character_set_schema", Type::Name), ("character_set_name", Type::Name), ("collation_catalog", Type::Name), ("collation_schema", Type::Name), ("collation_name", Type::Name), ("domain_catalog", Type::Name), ("domain_schema", Type::Name), ("domain_name", Type::Name), ("udt_catalog", Type::Name), ("udt_schema", Type::Name), ("udt_name", Type::Name), ("scope_catalog", Type::Name), ("scope_schema", Type::Name), ("scope_name", Type::Name), ("maximum_cardinality", Type::Int4), ("dtd_identifier", Type::Name), ("is_self_referencing", Type::Varchar), ("is_identity", Type::Varchar), ("identity_generation", Type::Varchar), ("identity_start", Type::Varchar), ("identity_increment", Type::Varchar), ("identity_maximum", Type::Varchar), ("identity_minimum", Type::Varchar), ("identity_cycle", Type::Varchar), ("is_generated", Type::Varchar), ("generation_expression", Type::Varchar), ("is_updatable", Type::Varchar)] },
];

/// The columns of information_schema.table_privileges and role_table_grants.
const TABLE_GRANTS: &[(&str, Type)] = &[
    ("grantor", Type::Name),
    ("grantee", Type::Name),
    ("table_catalog", Type::Name),
    ("table_schema", Type::Name),
    ("table_name", Type::Name),
    ("privilege_type", Type::Varchar),
    ("is_grantable", Type::Varchar),
    ("with_hierarchy", Type::Varchar),
];

/// The predefined roles of PostgreSQL 15 and the bootstrap superuser.
pub(crate) const ROLES: &[(u32, &str)] = &[
    (10, "postgres"),
    (3373, "pg_monitor"),
    (3374, "pg_read_all_settings"),
    (3375, "pg_read_all_stats"),
    (3377, "pg_stat_scan_tables"),
    (4200, "pg_signal_backend"),
    (4544, "pg_checkpoint"),
    (4569, "pg_read_server_files"),
    (4570, "pg_write_server_files"),
    (4571, "pg_execute_server_program"),
    (6171, "pg_database_owner"),
    (6181, "pg_read_all_data"),
    (6182, "pg_write_all_data"),
];

fn view(name: &str) -> Option<&'static View> {
    VIEWS.iter().find(|v| v.name == name)
}

/// The name of catalog view `oid` (pg_catalog's or information_schema's),
/// which has no pg_class row.
pub fn view_name(oid: u32) -> Option<&'static str> {
    VIEWS.iter().chain(INFORMATION_SCHEMA).find(|v| v.oid == oid).map(|v| v.name)
}

/// The view `schema.name` (schema None or pg_catalog) as a table to scope columns over.
pub fn lookup(schema: Option<&str>, name: &str) -> Option<Table> {
    let v = match schema {
        Some("information_schema") => INFORMATION_SCHEMA.iter().find(|v| v.name == name)?,
        Some(s) if s != "pg_catalog" => return None,
        _ => view(name)?,
    };
    let columns: Vec<Column> =
        v.columns.iter().map(|(n, ty)| Column { name: n.to_string(), ty: *ty, typmod: -1, not_null: false, default: None }).collect();
    Some(Table {
        oid: v.oid,
        name: v.name.to_string(),
        namespace: if schema == Some("information_schema") { INFORMATION_SCHEMA_NAMESPACE } else { catalog::PG_CATALOG_NAMESPACE },
        storage: RelStorage {
            rel: RelFileLocator { spc_oid: DEFAULT_TABLESPACE_OID, db_oid: crate::database::current(), rel_number: v.oid },
            toast: None,
            types: columns.iter().map(|c| c.ty).collect(),
            missing: Vec::new(),
            proj: None,
            system: None,
        },
        columns,
        indexes: Vec::new(),
        extras: Default::default(),
    })
}

/// (OID, name) of every view here (regclass output).
pub fn view_names() -> impl Iterator<Item = (u32, &'static str)> {
    VIEWS.iter().map(|v| (v.oid, v.name))
}

pub fn is_view(oid: u32) -> bool {
    VIEWS.iter().chain(INFORMATION_SCHEMA).any(|v| v.oid == oid)
}

/// A row of `v` being filled by column name; unset columns are NULL.
struct Row<'v> {
    v: &'v View,
    vals: Vec<Value>,
}

impl<'v> Row<'v> {
    fn new(v: &'v View) -> Row<'v> {
        Row { v, vals: vec![Value::Null; v.columns.len()] }
    }
    fn set(mut self, col: &str, val: Value) -> Self {
        if let Some(i) = self.v.columns.iter().position(|c| c.0 == col) {
            self.vals[i] = val;
        } else {
            debug_assert!(false, "no column {col} in {}", self.v.name);
        }
        self
    }
    fn oid(self, col: &str, o: u32) -> Self {
        self.set(col, Value::Oid(o))
    }
    fn b(self, col: &str, b: bool) -> Self {
        self.set(col, Value::Bool(b))
    }
    fn t(self, col: &str, s: &str) -> Self {
        self.set(col, Value::Text(s.to_string()))
    }
    fn i4(self, col: &str, i: i32) -> Self {
        self.set(col, Value::Int4(i))
    }
    fn i2(self, col: &str, i: i16) -> Self {
        self.set(col, Value::Int2(i))
    }
}

fn text_of(v: &Value) -> String {
    types::output(v).unwrap_or_default()
}

/// The rows of view `oid`, computed now from the catalogs as `snap` sees them.
pub fn rows(oid: u32, backend: &Backend, snap: &Snapshot, env: &dyn crate::exec::Env) -> Result<Vec<Vec<Value>>> {
    let v = VIEWS.iter().chain(INFORMATION_SCHEMA).find(|v| v.oid == oid).ok_or_else(|| SqlError::internal(format!("no catalog view {oid}")))?;
    let rows: Vec<Row> = match v.name {
        "pg_namespace" => {
            let mut out = Vec::new();
            let roles = crate::acl::role_graph(backend, snap)?;
            for ns in crate::acl::ns_acls(backend, snap)?.iter() {
                let acl = match &ns.acl {
                    Some(a) => crate::acl::display(a, &|o| roles.name(o)),
                    None => Value::Null,
                };
                out.push(Row::new(v).oid("oid", ns.oid).t("nspname", &ns.name).oid("nspowner", ns.owner).set("nspacl", acl));
            }
            out.push(Row::new(v).oid("oid", PG_TOAST_NAMESPACE).t("nspname", "pg_toast").oid("nspowner", BOOTSTRAP_SUPERUSER));
            out.push(Row::new(v).oid("oid", INFORMATION_SCHEMA_NAMESPACE).t("nspname", "information_schema").oid("nspowner", BOOTSTRAP_SUPERUSER));
            out
        }
        "pg_class" => pg_class(v, backend, snap)?,
        "pg_sequence" => {
            let mut out = Vec::new();
            for (_, r) in scan_rows(backend, &catalog::class_rel(), snap)? {
                let (Value::Oid(oid), Value::Text(kind)) = (&r[0], &r[5]) else { continue };
                if kind != "S" {
                    continue;
                }
                let Some(o) = crate::sequence::options_of(backend.engine(), *oid)? else { continue };
                out.push(
                    Row::new(v)
                        .oid("seqrelid", *oid)
                        .oid("seqtypid", o.ty.oid())
                        .set("seqstart", Value::Int8(o.start))
                        .set("seqincrement", Value::Int8(o.increment))
                        .set("seqmax", Value::Int8(o.max))
                        .set("seqmin", Value::Int8(o.min))
                        .set("seqcache", Value::Int8(o.cache))
                        .b("seqcycle", o.cycle),
                );
            }
            out
        }
        "pg_stats" => return crate::stats::pg_stats(backend, snap),
        "tables" => is_tables(v, backend, snap)?,
        "table_privileges" => is_table_grants(v, backend, snap, false)?,
        "role_table_grants" => is_table_grants(v, backend, snap, true)?,
        "column_privileges" => is_column_privileges(v, backend, snap)?,
        "pg_settings" => {
            let mut all = env.settings();
            all.sort();
            all.into_iter()
                .map(|(name, value, default)| {
                    use ferrogres_engine::config::guc;
                    let source = if value == default { "default" } else { "session" };
                    let row = Row::new(v);
                    let row = if name == crate::memory::SETTING {
                        row.t("category", "Resource Usage / Memory").t("short_desc", crate::memory::SHORT_DESC)
                    } else {
                        row
                    };
                    // The built-in value, not the one a -c or the configuration
                    // file gave (that one is reset_val).
                    let boot = guc::find(&name)
                        .filter(|g| !g.boot.is_empty())
                        .and_then(|g| g.canonical(&name, g.boot).ok())
                        .unwrap_or_else(|| default.clone());
                    let row = row.t("name", &name)
                        .t("setting", &value)
                        .t("source", source)
                        .t("boot_val", &boot)
                        .t("reset_val", &default)
                        .b("pending_restart", false);
                    // Context, type, unit and range from the table of known settings
                    // (`setting` is SHOW's form here, not PostgreSQL's base-unit number).
                    match guc::find(&name) {
                        Some(g) => {
                            let row = row.t("context", g.context.as_str());
                            match g.kind {
                                guc::Kind::Bool => row.t("vartype", "bool"),
                                guc::Kind::Int { min, max, unit } => {
                                    let row = row.t("vartype", "integer").t("min_val", &min.to_string()).t("max_val", &max.to_string());
                                    if unit == guc::Unit::None { row } else { row.t("unit", unit.as_str()) }
                                }
                                guc::Kind::Real { min, max } => {
                                    row.t("vartype", "real").t("min_val", &guc::fmt_g(min)).t("max_val", &guc::fmt_g(max))
                                }
                                guc::Kind::Enum { values, .. } => row.t("vartype", "enum").set(
                                    "enumvals",
                                    Value::Array(Box::new(ferrogres_datum::array::Array::new(
                                        Type::Text,
                                        values.iter().map(|e| Value::Text(e.to_string())).collect(),
                                    ))),
                                ),
                                guc::Kind::String => row.t("vartype", "string"),
                            }
                        }
                        None => row.t("context", "user").t("vartype", "string"),
                    }
                })
                .collect()
        }
        "columns" => is_columns(v, backend, snap)?,
        "pg_views" | "views" => view_rows(v, backend, snap)?,
        "pg_indexes" => pg_indexes(v, backend, snap)?,
        "pg_attribute" => pg_attribute(v, backend, snap)?,
        "pg_attrdef" => {
            let mut out = Vec::new();
            for (relid, num, expr) in defaults(backend, snap)? {
                out.push(Row::new(v).oid("oid", 0).oid("adrelid", relid).i2("adnum", num).t("adbin", &expr));
            }
            out
        }
        "pg_index" => {
            let mut out = Vec::new();
            // (index OID, access method) and each table column's type.
            let classes: Vec<(Value, u32)> = scan_rows(backend, &catalog::class_rel(), snap)?
                .into_iter()
                .filter(|(_, c)| c.get(5) == Some(&Value::Text("i".into())))
                .map(|(_, c)| (c[0].clone(), c.get(7).map_or(BTREE_AM_OID, index_am)))
                .collect();
            let mut col_types: std::collections::HashMap<(u32, i16), Type> = std::collections::HashMap::new();
            for (_, a) in scan_rows(backend, &catalog::attribute_rel(), snap)? {
                if let [Value::Oid(rel), _, Value::Oid(typ), Value::Int2(num), ..] = a.as_slice() {
                    col_types.insert((*rel, *num), Type::from_oid(*typ).unwrap_or(Type::Text));
                }
            }
            for (_, r) in scan_rows(backend, &crate::index::index_rel(), snap)? {
                let nkey = r[3].clone();
                let ncols = match &r[2] {
                    Value::Int2(n) => *n as usize,
                    _ => 0,
                };
                // The stored catalog keeps indkey and indoption as int2vector's text.
                let vector = |ty: Type, v: &Value| match v {
                    Value::Text(s) => types::input(ty, s, -1),
                    _ => Ok(Value::Null),
                };
                // Each key column's default operator class for the index's
                // access method, and its collation (0 for an expression).
                let am = classes.iter().find(|c| c.0 == r[0]).map_or(BTREE_AM_OID, |c| c.1);
                let keys: Vec<i16> = text_of(&r[6]).split_whitespace().map(|k| k.parse().unwrap_or(0)).collect();
                let key_type = |k: &i16| col_types.get(&(oid_of(&r[1]), *k)).copied();
                let class: Vec<Value> = keys.iter().map(|k| Value::Oid(key_type(k).map_or(0, |t| default_opclass(am, t)))).collect();
                let collation: Vec<Value> = keys.iter().map(|k| Value::Oid(key_type(k).map_or(0, type_collation))).collect();
                debug_assert!(keys.len() == ncols || ncols == 0);
                let vec_of = |items: Vec<Value>| Value::Array(Box::new(ferrogres_datum::array::Array::vector(Type::Oid, items)));
                out.push(
                    Row::new(v)
                        .set("indexrelid", r[0].clone())
                        .set("indrelid", r[1].clone())
                        .set("indnatts", r[2].clone())
                        .set("indnkeyatts", nkey)
                        .set("indisunique", r[4].clone())
                        .b("indnullsnotdistinct", false)
                        .set("indisprimary", r[5].clone())
                        .b("indisexclusion", false)
                        .b("indimmediate", true)
                        .b("indisclustered", false)
                        .b("indisvalid", true)
                        .b("indcheckxmin", false)
                        .b("indisready", true)
                        .b("indislive", true)
                        .b("indisreplident", false)
                        .set("indkey", vector(Type::Int2Vector, &r[6])?)
                        .set("indcollation", vec_of(collation))
                        .set("indclass", vec_of(class))
                        .set("indoption", vector(Type::Int2Vector, &r[7])?),
                );
            }
            out
        }
        "pg_constraint" => {
            let mut out = Vec::new();
            let indexes = scan_rows(backend, &crate::index::index_rel(), snap)?;
            for (_, r) in scan_rows(backend, &crate::index::constraint_rel(), snap)? {
                // A foreign key: the referenced table, its columns, the actions,
                // and the referenced table's unique index on those columns
                // (pgjdbc's getImportedKeys joins on conindid), as PostgreSQL has them.
                let fk = match (&r[1], &r[3], &r[4], &r[6], &r[7]) {
                    (Value::Text(name), Value::Text(kind), Value::Oid(rel), Value::Text(conkey), Value::Text(bin)) if kind == "f" => {
                        crate::foreign_key::decode(name, *rel, conkey, bin)
                    }
                    _ => None,
                };
                let conkey = match &r[6] {
                    Value::Text(s) => types::input(INT2_ARRAY, s, -1).unwrap_or(Value::Null),
                    _ => Value::Null,
                };
                // A foreign key added NOT VALID and not validated since (`crate::foreign_key`).
                let validated = !(r[3] == Value::Text("f".into()) && matches!(&r[7], Value::Text(b) if b.ends_with(" notvalid")));
                out.push(
                    Row::new(v)
                        .set("oid", r[0].clone())
                        .set("conname", r[1].clone())
                        .set("connamespace", r[2].clone())
                        .set("contype", r[3].clone())
                        .b("condeferrable", false)
                        .b("condeferred", false)
                        .b("convalidated", validated)
                        .set("conrelid", r[4].clone())
                        .oid("contypid", 0)
                        .set("conindid", r[5].clone())
                        .oid("conparentid", 0)
                        .oid("confrelid", 0)
                        .t("confupdtype", " ")
                        .t("confdeltype", " ")
                        .t("confmatchtype", " ")
                        .b("conislocal", true)
                        .i4("coninhcount", 0)
                        .b("connoinherit", true)
                        .set("conkey", conkey),
                );
                if let Some(fk) = fk {
                    let keys: Vec<String> = fk.parent_cols.iter().map(|c| (c + 1).to_string()).collect();
                    let index = indexes
                        .iter()
                        .find(|(_, i)| {
                            i[1] == Value::Oid(fk.parent) && i[4] == Value::Bool(true) && matches!(&i[6], Value::Text(k) if k.split(' ').eq(keys.iter().map(String::as_str)))
                        })
                        .map_or(Value::Oid(0), |(_, i)| i[0].clone());
                    let row = out.pop().expect("pushed above");
                    out.push(
                        row.set("conindid", index)
                            .oid("confrelid", fk.parent)
                            .t("confupdtype", &fk.on_update.to_string())
                            .t("confdeltype", &fk.on_delete.to_string())
                            .t("confmatchtype", "s")
                            .set("confkey", types::input(INT2_ARRAY, &format!("{{{}}}", keys.join(",")), -1).unwrap_or(Value::Null)),
                    );
                }
            }
            out
        }
        "pg_type" => pg_type(v),
        "pg_opclass" => OPCLASSES
            .iter()
            .map(|(oid, am, name, family, ty)| {
                Row::new(v)
                    .oid("oid", *oid)
                    .oid("opcmethod", *am)
                    .t("opcname", name)
                    .oid("opcnamespace", catalog::PG_CATALOG_NAMESPACE)
                    .oid("opcowner", BOOTSTRAP_SUPERUSER)
                    .oid("opcfamily", *family)
                    .oid("opcintype", ty.oid())
                    .b("opcdefault", true)
                    // btree's name_ops stores cstring keys.
                    .oid("opckeytype", if *oid == 10028 { 2275 } else { 0 })
            })
            .collect(),
        "pg_am" => [(2, "heap", "heap_tableam_handler", "t"), (403, "btree", "bthandler", "i"), (405, "hash", "hashhandler", "i"), (783, "gist", "gisthandler", "i"), (2742, "gin", "ginhandler", "i"), (4000, "spgist", "spghandler", "i"), (3580, "brin", "brinhandler", "i")]
            .iter()
            .map(|(o, n, h, t)| Row::new(v).oid("oid", *o).t("amname", n).t("amhandler", h).t("amtype", t))
            .collect(),
        "pg_database" => crate::database::list(backend, snap)?
            .into_iter()
            .map(|(_, d)| {
                let acl = d.acl.as_deref().map_or(Value::Null, |a| types::input(TEXT_ARRAY, a, -1).unwrap_or(Value::Null));
                Row::new(v)
                    .oid("oid", d.oid)
                    .t("datname", &d.name)
                    .oid("datdba", d.dba)
                    .i4("encoding", d.encoding)
                    .t("datlocprovider", "c")
                    .b("datistemplate", d.is_template)
                    .b("datallowconn", d.allow_conn)
                    .i4("datconnlimit", d.conn_limit)
                    .set("datfrozenxid", Value::Oid(716))
                    .set("datminmxid", Value::Oid(1))
                    .oid("dattablespace", DEFAULT_TABLESPACE_OID)
                    .t("datcollate", &d.collate)
                    .t("datctype", &d.ctype)
                    .set("datacl", acl)
            })
            .collect(),
        "pg_authid" | "pg_roles" | "pg_user" | "pg_shadow" => {
            let roles = crate::roles::list(backend, snap)?;
            if matches!(v.name, "pg_authid" | "pg_shadow") {
                // Superuser only, as PostgreSQL's REVOKE ALL on them from PUBLIC makes it.
                let me = roles.iter().find(|(_, r)| r.oid == backend.current_user);
                if !me.is_some_and(|(_, r)| r.superuser) {
                    let kind = if v.name == "pg_authid" { "table" } else { "view" };
                    return Err(SqlError::new(b"42501", format!("permission denied for {kind} {}", v.name)));
                }
            }
            let config = |r: &crate::roles::RoleRow| {
                if r.config.is_empty() {
                    Value::Null
                } else {
                    Value::Array(Box::new(ferrogres_datum::array::Array::new(Type::Text, r.config.iter().cloned().map(Value::Text).collect())))
                }
            };
            let until = |r: &crate::roles::RoleRow| r.valid_until.map_or(Value::Null, Value::Timestamptz);
            roles
                .iter()
                .filter(|(_, r)| !matches!(v.name, "pg_user" | "pg_shadow") || r.canlogin)
                .map(|(_, r)| {
                    let row = Row::new(v);
                    match v.name {
                        "pg_user" | "pg_shadow" => {
                            let pw = if v.name == "pg_user" {
                                Value::Text("********".into())
                            } else {
                                r.password.clone().map_or(Value::Null, Value::Text)
                            };
                            row.t("usename", &r.name)
                                .oid("usesysid", r.oid)
                                .b("usecreatedb", r.createdb)
                                .b("usesuper", r.superuser)
                                .b("userepl", r.replication)
                                .b("usebypassrls", r.bypassrls)
                                .set("passwd", pw)
                                .set("valuntil", until(r))
                                .set("useconfig", config(r))
                        }
                        _ => {
                            let row = row
                                .oid("oid", r.oid)
                                .t("rolname", &r.name)
                                .b("rolsuper", r.superuser)
                                .b("rolinherit", r.inherit)
                                .b("rolcreaterole", r.createrole)
                                .b("rolcreatedb", r.createdb)
                                .b("rolcanlogin", r.canlogin)
                                .b("rolreplication", r.replication)
                                .b("rolbypassrls", r.bypassrls)
                                .i4("rolconnlimit", r.connlimit)
                                .set("rolvaliduntil", until(r));
                            if v.name == "pg_roles" {
                                row.t("rolpassword", "********").set("rolconfig", config(r))
                            } else {
                                row.set("rolpassword", r.password.clone().map_or(Value::Null, Value::Text))
                            }
                        }
                    }
                })
                .collect()
        }
        "pg_proc" => {
            let roles = crate::acl::role_graph(backend, snap)?;
            crate::sqlfunc::all(backend, snap)?
                .iter()
                .map(|f| {
                    let argtypes = f.args.iter().map(|t| Value::Oid(t.oid())).collect();
                    let names: Vec<Value> = f.arg_names.iter().map(|n| Value::Text(n.clone())).collect();
                    Row::new(v)
                        .oid("oid", f.oid)
                        .t("proname", &f.name)
                        .oid("pronamespace", f.namespace)
                        .oid("proowner", f.owner)
                        .oid("prolang", SQL_LANGUAGE)
                        .set("procost", Value::Float4(100.0))
                        .set("prorows", Value::Float4(if f.retset { 1000.0 } else { 0.0 }))
                        .oid("provariadic", 0)
                        .t("prosupport", "-")
                        .t("prokind", "f")
                        .b("prosecdef", false)
                        .b("proleakproof", false)
                        .b("proisstrict", f.strict)
                        .b("proretset", f.retset)
                        .t("provolatile", &f.volatility.to_string())
                        .t("proparallel", "u")
                        .i2("pronargs", f.args.len() as i16)
                        .i2("pronargdefaults", f.n_defaults() as i16)
                        .oid("prorettype", f.ret.oid())
                        .set("proargtypes", Value::Array(Box::new(ferrogres_datum::array::Array::vector(Type::Oid, argtypes))))
                        .set("proargnames", if f.arg_names.iter().all(String::is_empty) { Value::Null } else { Value::Array(Box::new(ferrogres_datum::array::Array::new(Type::Text, names))) })
                        .t("prosrc", &f.src)
                        .set("proacl", f.acl.as_ref().map_or(Value::Null, |a| crate::acl::display(a, &|o| roles.name(o))))
                })
                .collect()
        }
        "pg_language" => [(12, "internal", false, 2246), (13, "c", false, 2247), (SQL_LANGUAGE, "sql", true, 2248)]
            .iter()
            .map(|(oid, name, trusted, validator)| {
                Row::new(v)
                    .oid("oid", *oid)
                    .t("lanname", name)
                    .oid("lanowner", BOOTSTRAP_SUPERUSER)
                    .b("lanispl", false)
                    .b("lanpltrusted", *trusted)
                    .oid("lanplcallfoid", 0)
                    .oid("laninline", 0)
                    .oid("lanvalidator", *validator)
            })
            .collect(),
        "pg_default_acl" => {
            let roles = crate::acl::role_graph(backend, snap)?;
            crate::default_acl::list(backend, snap)?
                .iter()
                .map(|d| {
                    Row::new(v)
                        .oid("oid", d.oid)
                        .oid("defaclrole", d.role)
                        .oid("defaclnamespace", d.namespace)
                        .t("defaclobjtype", &(d.objtype as char).to_string())
                        .set("defaclacl", crate::acl::display(&d.acl, &|o| roles.name(o)))
                })
                .collect()
        }
        "pg_parameter_acl" => {
            let roles = crate::acl::role_graph(backend, snap)?;
            crate::param_acl::list(backend, snap)?
                .into_iter()
                .map(|(_, p)| Row::new(v).oid("oid", p.oid).t("parname", &p.name).set("paracl", crate::acl::display(&p.acl, &|o| roles.name(o))))
                .collect()
        }
        "pg_auth_members" => crate::roles::memberships(backend, snap)?
            .into_iter()
            .map(|(_, m)| Row::new(v).oid("roleid", m.role).oid("member", m.member).oid("grantor", m.grantor).b("admin_option", m.admin))
            .collect(),
        "pg_tablespace" => [(1663, "pg_default"), (1664, "pg_global")]
            .iter()
            .map(|(o, n)| Row::new(v).oid("oid", *o).t("spcname", n).oid("spcowner", BOOTSTRAP_SUPERUSER))
            .collect(),
        "pg_collation" => [(100, "default", "d", None), (950, "C", "c", Some("C")), (951, "POSIX", "c", Some("POSIX"))]
            .iter()
            .map(|(o, n, p, c)| {
                let r = Row::new(v)
                    .oid("oid", *o)
                    .t("collname", n)
                    .oid("collnamespace", catalog::PG_CATALOG_NAMESPACE)
                    .oid("collowner", BOOTSTRAP_SUPERUSER)
                    .t("collprovider", p)
                    .b("collisdeterministic", true)
                    .i4("collencoding", -1);
                match c {
                    Some(c) => r.t("collcollate", c).t("collctype", c),
                    None => r,
                }
            })
            .collect(),
        _ => Vec::new(),
    };
    Ok(rows.into_iter().map(|r| r.vals).collect())
}

/// (relid, attnum, type, typmod, stored text) of every column default.
#[allow(clippy::type_complexity)] // the row of each default, as documented above
/// The stored column defaults: (table OID, attnum, the expression as
/// pg_get_expr shows it). A constant default keeps its constant's text in
/// adbin (deparsed here); an expression default (`nextval(...)`, `now()`)
/// keeps its SQL text in adsrc ([`crate::constraints`]).
fn defaults(backend: &Backend, snap: &Snapshot) -> Result<Vec<(u32, i16, String)>> {
    let attrs = scan_rows(backend, &catalog::cat(catalog::PG_ATTRIBUTE, &[Type::Oid, Type::Text, Type::Oid, Type::Int2, Type::Int4, Type::Bool]), snap)?;
    let mut out = Vec::new();
    for (_, r) in scan_rows(backend, &catalog::attrdef_rel(), snap)? {
        let [Value::Oid(rel), Value::Int2(num), adbin, adsrc] = r.as_slice() else { continue };
        let Some(a) = attrs.iter().find(|(_, a)| a[0] == Value::Oid(*rel) && a[3] == Value::Int2(*num)) else { continue };
        let (Value::Oid(t), Value::Int4(tm)) = (&a.1[2], &a.1[4]) else { continue };
        let expr = match (adbin, adsrc) {
            (Value::Text(text), _) => deparse_const(Type::from_oid(*t).unwrap_or(Type::Text), *tm, text),
            (_, Value::Text(sql)) => sql.clone(),
            _ => continue,
        };
        out.push((*rel, *num, expr));
    }
    Ok(out)
}

/// A constant default as PostgreSQL deparses it (pg_get_expr): numbers bare
/// (negative ones quoted and cast), booleans bare, anything else a quoted
/// literal cast to its type.
pub fn deparse_const(ty: Type, typmod: i32, text: &str) -> String {
    let quoted = format!("'{}'", text.replace('\'', "''"));
    match ty {
        // An integer default was an integer literal: int4 if it fits, else int8.
        Type::Int2 | Type::Int4 | Type::Int8 => match text.parse::<i64>() {
            Ok(v) if v >= 0 => text.to_string(),
            Ok(v) if i32::try_from(v).is_ok() => format!("{quoted}::integer"),
            _ => format!("{quoted}::bigint"),
        },
        Type::Float8 if !text.starts_with('-') && text.parse::<f64>().is_ok_and(f64::is_finite) => text.to_string(),
        Type::Bool => if text == "t" { "true" } else { "false" }.to_string(),
        Type::Text => format!("{quoted}::text"),
        Type::Varchar | Type::Bpchar => format!("{quoted}::{}", ty.sql_name()),
        t => format!("{quoted}::{}", t.name_with_typmod(typmod)),
    }
}

fn pg_class<'v>(v: &'v View, backend: &Backend, snap: &Snapshot) -> Result<Vec<Row<'v>>> {
    let roles = crate::acl::role_graph(backend, snap)?;
    let indexes = scan_rows(backend, &crate::index::index_rel(), snap)?;
    let temp_namespaces: Vec<u32> =
        crate::namespace::namespaces(backend, snap)?.into_iter().filter(|(_, n)| crate::namespace::is_temp_name(n)).map(|x| x.0).collect();
    let mut out = Vec::new();
    for (_, r) in scan_rows(backend, &catalog::class_rel(), snap)? {
        let [Value::Oid(oid), name, Value::Oid(ns), Value::Oid(filenode), Value::Oid(toast), Value::Text(kind), natts, relam, pages, tuples, rest @ ..] = r.as_slice() else {
            continue;
        };
        let owner = match rest.first() {
            Some(Value::Oid(o)) => *o,
            _ => BOOTSTRAP_SUPERUSER,
        };
        let relacl = match crate::acl::rel_acl_of_row(*oid, *ns, crate::acl::ObjKind::of_relkind(kind), owner, rest.get(1)) {
            Some(acl) => crate::acl::display(&acl, &|o| roles.name(o)),
            None => Value::Null,
        };
        let persistence = if temp_namespaces.contains(ns) { "t" } else { "p" };
        let is_index = kind == "i";
        let is_view = kind == "v";
        let has_index = indexes.iter().any(|(_, i)| i[1] == Value::Oid(*oid));
        let reltuples = match tuples {
            Value::Float8(f) => Value::Float4(*f as f32),
            _ => Value::Float4(-1.0),
        };
        out.push(
            Row::new(v)
                .oid("oid", *oid)
                .t("relname", &text_of(name))
                .oid("relnamespace", *ns)
                .oid("reltype", 0)
                .oid("reloftype", 0)
                .oid("relowner", owner)
                .set("relacl", relacl)
                .oid("relam", if is_index { index_am(relam) } else if is_view { 0 } else { 2 })
                .oid("relfilenode", *filenode)
                .oid("reltablespace", 0)
                .set("relpages", pages.clone())
                .set("reltuples", reltuples)
                .i4("relallvisible", match rest.get(2) {
                    Some(Value::Int4(n)) => *n,
                    _ => 0,
                })
                .oid("reltoastrelid", *toast)
                .b("relhasindex", has_index)
                .b("relisshared", false)
                .t("relpersistence", persistence)
                .t("relkind", kind)
                .set("relnatts", natts.clone())
                .i2("relchecks", 0)
                .b("relhasrules", is_view)
                .b("relhastriggers", false)
                .b("relhassubclass", false)
                .b("relrowsecurity", false)
                .b("relforcerowsecurity", false)
                .b("relispopulated", true)
                .t("relreplident", if is_index || is_view { "n" } else { "d" })
                .b("relispartition", false)
                .oid("relrewrite", 0)
                .set("relfrozenxid", Value::Oid(0))
                .set("relminmxid", Value::Oid(if is_index || is_view { 0 } else { 1 }))
                .set("reloptions", if is_index { index_reloptions(&indexes, *oid) } else { Value::Null }),
        );
    }
    Ok(out)
}

/// An index's access method from its pg_class row's relam (B-tree when the row
/// predates the column's use).
const BTREE_AM_OID: u32 = 403;
const ANYARRAY_OID: u32 = 2277;

/// The default operator classes of the built-in types: (oid, access method,
/// name, family, input type), as PostgreSQL 15 numbers them. Arrays share
/// array_ops, whose input type is anyarray ([`OpcType::ANYARRAY`]).
static OPCLASSES: &[(u32, u32, &str, u32, OpcType)] = &[
    (1978, 403, "int4_ops", 1976, OpcType(Type::Int4)),
    (1979, 403, "int2_ops", 1976, OpcType(Type::Int2)),
    (1981, 403, "oid_ops", 1989, OpcType(Type::Oid)),
    (3122, 403, "date_ops", 434, OpcType(Type::Date)),
    (3123, 403, "float8_ops", 1970, OpcType(Type::Float8)),
    (3124, 403, "int8_ops", 1976, OpcType(Type::Int8)),
    (3125, 403, "numeric_ops", 1988, OpcType(Type::Numeric)),
    (3126, 403, "text_ops", 1994, OpcType(Type::Text)),
    (3127, 403, "timestamptz_ops", 434, OpcType(Type::Timestamptz)),
    (3128, 403, "timestamp_ops", 434, OpcType(Type::Timestamp)),
    (10000, 403, "array_ops", 397, OpcType::ANYARRAY),
    (10003, 403, "bool_ops", 424, OpcType(Type::Bool)),
    (10004, 403, "bpchar_ops", 426, OpcType(Type::Bpchar)),
    (10006, 403, "bytea_ops", 428, OpcType(Type::Bytea)),
    (10007, 403, "char_ops", 429, OpcType(Type::Char)),
    (10012, 403, "float4_ops", 1970, OpcType(Type::Float4)),
    (10022, 403, "interval_ops", 1982, OpcType(Type::Interval)),
    (10028, 403, "name_ops", 1994, OpcType(Type::Name)),
    (10032, 403, "oidvector_ops", 1991, OpcType(Type::OidVector)),
    (10038, 403, "time_ops", 1996, OpcType(Type::Time)),
    (10041, 403, "timetz_ops", 2000, OpcType(Type::TimeTz)),
    (10065, 403, "uuid_ops", 2968, OpcType(Type::Uuid)),
    (10067, 403, "pg_lsn_ops", 3253, OpcType(Type::PgLsn)),
    (10088, 403, "jsonb_ops", 4033, OpcType(Type::Jsonb)),
    (10001, 405, "array_ops", 627, OpcType::ANYARRAY),
    (10005, 405, "bpchar_ops", 427, OpcType(Type::Bpchar)),
    (10008, 405, "char_ops", 431, OpcType(Type::Char)),
    (10011, 405, "date_ops", 435, OpcType(Type::Date)),
    (10013, 405, "float4_ops", 1971, OpcType(Type::Float4)),
    (10014, 405, "float8_ops", 1971, OpcType(Type::Float8)),
    (10019, 405, "int2_ops", 1977, OpcType(Type::Int2)),
    (10020, 405, "int4_ops", 1977, OpcType(Type::Int4)),
    (10021, 405, "int8_ops", 1977, OpcType(Type::Int8)),
    (10023, 405, "interval_ops", 1983, OpcType(Type::Interval)),
    (10029, 405, "name_ops", 1995, OpcType(Type::Name)),
    (10030, 405, "numeric_ops", 1998, OpcType(Type::Numeric)),
    (10031, 405, "oid_ops", 1990, OpcType(Type::Oid)),
    (10033, 405, "oidvector_ops", 1992, OpcType(Type::OidVector)),
    (10037, 405, "text_ops", 1995, OpcType(Type::Text)),
    (10039, 405, "time_ops", 1997, OpcType(Type::Time)),
    (10040, 405, "timestamptz_ops", 1999, OpcType(Type::Timestamptz)),
    (10042, 405, "timetz_ops", 2001, OpcType(Type::TimeTz)),
    (10046, 405, "timestamp_ops", 2040, OpcType(Type::Timestamp)),
    (10048, 405, "bool_ops", 2222, OpcType(Type::Bool)),
    (10049, 405, "bytea_ops", 2223, OpcType(Type::Bytea)),
    (10051, 405, "xid_ops", 2225, OpcType(Type::Xid)),
    (10066, 405, "uuid_ops", 2969, OpcType(Type::Uuid)),
    (10068, 405, "pg_lsn_ops", 3254, OpcType(Type::PgLsn)),
    (10089, 405, "jsonb_ops", 4034, OpcType(Type::Jsonb)),
];

/// An operator class's input type: a built-in type, or anyarray (array_ops).
#[derive(Clone, Copy)]
struct OpcType(Type);

impl OpcType {
    /// anyarray has no `Type`: void stands for it in [`OPCLASSES`].
    const ANYARRAY: OpcType = OpcType(Type::Void);
    fn oid(self) -> u32 {
        if self.0 == Type::Void { ANYARRAY_OID } else { self.0.oid() }
    }
}

/// The default operator class of access method `am` for a key of type `ty`
/// (0 when it has none): varchar uses text's (binary coercible), arrays array_ops.
fn default_opclass(am: u32, ty: Type) -> u32 {
    let ty = match ty {
        Type::Varchar => Type::Text,
        Type::Array(_) => Type::Void,
        t => t,
    };
    OPCLASSES.iter().find(|c| c.1 == am && c.4 .0 == ty).map_or(0, |c| c.0)
}

/// A column's collation as pg_attribute.attcollation has it: the database
/// default (100) for the string types, C (950) for name, else 0.
fn type_collation(ty: Type) -> u32 {
    match ty {
        Type::Text | Type::Varchar | Type::Bpchar => 100,
        Type::Array(Type::Text | Type::Varchar | Type::Bpchar) => 100,
        Type::Name => 950,
        _ => 0,
    }
}

fn oid_of(v: &Value) -> u32 {
    match v {
        Value::Oid(o) => *o,
        _ => 0,
    }
}

fn index_am(relam: &Value) -> u32 {
    match relam {
        Value::Oid(a) if *a == crate::hash_index::HASH_AM_OID => *a,
        _ => crate::index::BTREE_AM_OID,
    }
}

/// pg_class.reloptions of index `oid`: its pg_index.indreloptions as text[]
/// (`{fillfactor=60}`), or NULL.
fn index_reloptions(indexes: &[(ferrogres_engine::heap::tuple::Tid, Vec<Value>)], oid: u32) -> Value {
    match indexes.iter().find(|(_, i)| i[0] == Value::Oid(oid)).and_then(|(_, i)| i.get(8)) {
        Some(Value::Text(t)) => Value::Array(Box::new(ferrogres_datum::array::Array::new(Type::Text, t.split(',').map(|o| Value::Text(o.to_string())).collect()))),
        _ => Value::Null,
    }
}

fn schema_name(ns: &Value) -> &'static str {
    match ns {
        Value::Oid(catalog::PUBLIC_NAMESPACE) => "public",
        _ => "pg_catalog",
    }
}

/// information_schema.table_privileges (`roles_only`: role_table_grants):
/// one row per relation (tables and views), ACL item and privilege, the
/// default ACL standing for a NULL one, as PostgreSQL's aclexplode; only the
/// items whose grantor or grantee is a role whose privileges the current user
/// has, or (table_privileges only) whose grantee is PUBLIC. Grantable: a
/// grant option, or a grantee with the owner's privileges.
fn is_table_grants<'v>(v: &'v View, backend: &Backend, snap: &Snapshot, roles_only: bool) -> Result<Vec<Row<'v>>> {
    use crate::acl;
    let dbname = crate::database::current_name(backend, snap)?;
    let roles = acl::role_graph(backend, snap)?;
    let mine = roles.privs_of(backend.current_user);
    let enabled = |r: u32| roles.superuser(backend.current_user) || mine.contains(&r);
    const NAMES: [(u16, &str); 7] = [
        (acl::INSERT, "INSERT"),
        (acl::SELECT, "SELECT"),
        (acl::UPDATE, "UPDATE"),
        (acl::DELETE, "DELETE"),
        (acl::TRUNCATE, "TRUNCATE"),
        (acl::REFERENCES, "REFERENCES"),
        (acl::TRIGGER, "TRIGGER"),
    ];
    let mut out = Vec::new();
    for (_, r) in scan_rows(backend, &catalog::class_rel(), snap)? {
        let (Value::Oid(oid), Value::Oid(ns), Value::Text(kind)) = (&r[0], &r[2], &r[5]) else { continue };
        if kind != "r" && kind != "v" {
            continue;
        }
        let Some(rel) = acl::rel_acl(backend, snap, *oid)? else { continue };
        let items = rel.acl.clone().unwrap_or_else(|| acl::default_acl(rel.kind, rel.owner));
        let schema = crate::namespace::namespace_name(backend, snap, *ns)?.unwrap_or_default();
        for it in &items {
            let public = it.grantee == acl::PUBLIC;
            if !(enabled(it.grantor) || (!public && enabled(it.grantee)) || (public && !roles_only)) {
                continue;
            }
            let grantee = if public { "PUBLIC".to_string() } else { roles.name(it.grantee) };
            let owner_like = !public && roles.has_privs_of(it.grantee, rel.owner);
            for (bit, name) in NAMES {
                if it.privs & bit == 0 {
                    continue;
                }
                let grantable = owner_like || it.goptions & bit != 0;
                out.push(
                    Row::new(v)
                        .t("grantor", &roles.name(it.grantor))
                        .t("grantee", &grantee)
                        .t("table_catalog", &dbname)
                        .t("table_schema", &schema)
                        .t("table_name", &rel.name)
                        .t("privilege_type", name)
                        .t("is_grantable", if grantable { "YES" } else { "NO" })
                        .t("with_hierarchy", if bit == acl::SELECT { "YES" } else { "NO" }),
                );
            }
        }
    }
    Ok(out)
}

/// information_schema.column_privileges: for each column of a table or
/// view, the column privileges of its table's ACL items (the default for a
/// NULL one) and of its own (attacl), without repeats, as PostgreSQL's
/// view; only items whose grantor or grantee is a role whose privileges the
/// current user has, or whose grantee is PUBLIC. Grantable: a grant option,
/// or a grantee with the owner's privileges.
fn is_column_privileges<'v>(v: &'v View, backend: &Backend, snap: &Snapshot) -> Result<Vec<Row<'v>>> {
    use crate::acl;
    let dbname = crate::database::current_name(backend, snap)?;
    let roles = acl::role_graph(backend, snap)?;
    let mine = roles.privs_of(backend.current_user);
    let enabled = |r: u32| roles.superuser(backend.current_user) || mine.contains(&r);
    const NAMES: [(u16, &str); 4] = [(acl::INSERT, "INSERT"), (acl::SELECT, "SELECT"), (acl::UPDATE, "UPDATE"), (acl::REFERENCES, "REFERENCES")];
    let mut out = Vec::new();
    let mut columns = acl::all_column_acls(backend, snap, None)?;
    for (_, r) in scan_rows(backend, &catalog::class_rel(), snap)? {
        let (Value::Oid(oid), Value::Oid(ns), Value::Text(kind)) = (&r[0], &r[2], &r[5]) else { continue };
        if kind != "r" && kind != "v" {
            continue;
        }
        let Some(rel) = acl::rel_acl(backend, snap, *oid)? else { continue };
        let table_items = rel.acl.clone().unwrap_or_else(|| acl::default_acl(rel.kind, rel.owner));
        let schema = crate::namespace::namespace_name(backend, snap, *ns)?.unwrap_or_default();
        for col in columns.remove(oid).unwrap_or_default().into_iter().filter(|c| !c.dropped && c.attnum > 0) {
            // (grantor, grantee, privilege, grantable), without repeats.
            let mut seen: Vec<(u32, u32, u16, bool)> = Vec::new();
            for it in table_items.iter().chain(col.acl.iter().flatten()) {
                let public = it.grantee == acl::PUBLIC;
                if !public && !enabled(it.grantor) && !enabled(it.grantee) {
                    continue;
                }
                let owner_like = !public && roles.has_privs_of(it.grantee, rel.owner);
                for (bit, _) in NAMES {
                    let key = (it.grantor, it.grantee, bit, owner_like || it.goptions & bit != 0);
                    if it.privs & bit != 0 && !seen.contains(&key) {
                        seen.push(key);
                    }
                }
            }
            for (grantor, grantee, bit, grantable) in seen {
                let name = NAMES.iter().find(|n| n.0 == bit).map_or("", |n| n.1);
                let grantee = if grantee == acl::PUBLIC { "PUBLIC".to_string() } else { roles.name(grantee) };
                out.push(
                    Row::new(v)
                        .t("grantor", &roles.name(grantor))
                        .t("grantee", &grantee)
                        .t("table_catalog", &dbname)
                        .t("table_schema", &schema)
                        .t("table_name", &rel.name)
                        .t("column_name", &col.name)
                        .t("privilege_type", name)
                        .t("is_grantable", if grantable { "YES" } else { "NO" }),
                );
            }
        }
    }
    Ok(out)
}

/// information_schema.tables: the tables (not the catalogs' own rows).
fn is_tables<'v>(v: &'v View, backend: &Backend, snap: &Snapshot) -> Result<Vec<Row<'v>>> {
    let dbname = crate::database::current_name(backend, snap)?;
    let mut out = Vec::new();
    for (_, r) in scan_rows(backend, &catalog::class_rel(), snap)? {
        if r[5] == Value::Text("v".into()) {
            let (Value::Oid(oid), Value::Oid(ns)) = (&r[0], &r[2]) else { continue };
            let insertable = crate::view::definition(backend, snap, *oid)?.is_some_and(|d| crate::view::auto_updatable(&d));
            let schema = crate::namespace::namespace_name(backend, snap, *ns)?.unwrap_or_default();
            out.push(
                Row::new(v)
                    .t("table_catalog", &dbname)
                    .t("table_schema", &schema)
                    .t("table_name", &text_of(&r[1]))
                    .t("table_type", "VIEW")
                    .t("is_insertable_into", if insertable { "YES" } else { "NO" })
                    .t("is_typed", "NO"),
            );
            continue;
        }
        if r[5] != Value::Text("r".into()) {
            continue;
        }
        out.push(
            Row::new(v)
                .t("table_catalog", &dbname)
                .t("table_schema", schema_name(&r[2]))
                .t("table_name", &text_of(&r[1]))
                .t("table_type", "BASE TABLE")
                .t("is_insertable_into", "YES")
                .t("is_typed", "NO"),
        );
    }
    Ok(out)
}

/// information_schema.columns: the tables' columns.
fn is_columns<'v>(v: &'v View, backend: &Backend, snap: &Snapshot) -> Result<Vec<Row<'v>>> {
    let dbname = crate::database::current_name(backend, snap)?;
    let classes: Vec<Vec<Value>> = scan_rows(backend, &catalog::class_rel(), snap)?.into_iter().map(|r| r.1).collect();
    let defs = defaults(backend, snap)?;
    let st = catalog::cat(catalog::PG_ATTRIBUTE, &[Type::Oid, Type::Text, Type::Oid, Type::Int2, Type::Int4, Type::Bool]);
    let mut out = Vec::new();
    for (_, r) in scan_rows(backend, &st, snap)? {
        let [Value::Oid(rel), name, Value::Oid(typ), Value::Int2(num), Value::Int4(typmod), Value::Bool(notnull)] = r.as_slice() else { continue };
        if text_of(name).starts_with("........pg.dropped.") {
            continue;
        }
        let Some(c) = classes.iter().find(|c| c[0] == Value::Oid(*rel) && c[5] == Value::Text("r".into())) else { continue };
        let ty = Type::from_oid(*typ).unwrap_or(Type::Text);
        let mut row = Row::new(v)
            .t("table_catalog", &dbname)
            .t("table_schema", schema_name(&c[2]))
            .t("table_name", &text_of(&c[1]))
            .t("column_name", &text_of(name))
            .i4("ordinal_position", *num as i32)
            .t("is_nullable", if *notnull { "NO" } else { "YES" })
            .t("data_type", if matches!(ty, Type::Array(_)) { "ARRAY" } else { ty.sql_name() })
            .t("udt_catalog", &dbname)
            .t("udt_schema", "pg_catalog")
            .t("udt_name", ty.typname())
            .t("dtd_identifier", &num.to_string())
            .t("is_self_referencing", "NO")
            .t("is_identity", "NO")
            .t("identity_cycle", "NO")
            .t("is_generated", "NEVER")
            .t("is_updatable", "YES");
        if let Some(d) = defs.iter().find(|d| d.0 == *rel && d.1 == *num) {
            row = row.t("column_default", &d.2);
        }
        let (prec, radix, scale) = match ty {
            Type::Int2 => (Some(16), Some(2), Some(0)),
            Type::Int4 => (Some(32), Some(2), Some(0)),
            Type::Int8 => (Some(64), Some(2), Some(0)),
            Type::Float4 => (Some(24), Some(2), None),
            Type::Float8 => (Some(53), Some(2), None),
            _ => (None, None, None),
        };
        for (col, val) in [("numeric_precision", prec), ("numeric_precision_radix", radix), ("numeric_scale", scale)] {
            if let Some(x) = val {
                row = row.i4(col, x);
            }
        }
        match ty {
            Type::Varchar | Type::Bpchar if *typmod >= 4 => {
                row = row.i4("character_maximum_length", typmod - 4).i4("character_octet_length", (typmod - 4) * 4);
            }
            Type::Bpchar => row = row.i4("character_maximum_length", 1).i4("character_octet_length", 4),
            Type::Text | Type::Varchar => row = row.i4("character_octet_length", 1073741824),
            Type::Date => row = row.i4("datetime_precision", 0),
            Type::Time | Type::TimeTz | Type::Timestamp | Type::Timestamptz | Type::Interval => {
                row = row.i4("datetime_precision", if *typmod >= 0 { *typmod } else { 6 });
            }
            _ => {}
        }
        out.push(row);
    }
    Ok(out)
}

fn pg_attribute<'v>(v: &'v View, backend: &Backend, snap: &Snapshot) -> Result<Vec<Row<'v>>> {
    let defs = defaults(backend, snap)?;
    let roles = crate::acl::role_graph(backend, snap)?;
    let mut out = Vec::new();
    let st = catalog::attribute_rel();
    let mut attrs = scan_rows(backend, &st, snap)?;
    // An index's attributes: its key columns, as the table has them (not null and default aside);
    // a hash index stores the int4 hash code (its operator class's storage type).
    let hash_indexes: Vec<Value> = scan_rows(backend, &catalog::class_rel(), snap)?
        .into_iter()
        .filter(|(_, c)| c.get(5) == Some(&Value::Text("i".into())) && c.get(7).is_some_and(|am| index_am(am) == crate::hash_index::HASH_AM_OID))
        .map(|(_, c)| c[0].clone())
        .collect();
    let mut index_attrs = Vec::new();
    for (_, ix) in scan_rows(backend, &crate::index::index_rel(), snap)? {
        let hash = hash_indexes.contains(&ix[0]);
        for (k, num) in text_of(&ix[6]).split_whitespace().enumerate() {
            let num: i16 = num.parse().unwrap_or(0);
            if let Some((tid, a)) = attrs.iter().find(|(_, a)| a[0] == ix[1] && a[3] == Value::Int2(num)) {
                let (ty, typmod) = if hash { (Value::Oid(Type::Int4.oid()), Value::Int4(-1)) } else { (a[2].clone(), a[4].clone()) };
                index_attrs.push((*tid, vec![ix[0].clone(), a[1].clone(), ty, Value::Int2(k as i16 + 1), typmod, Value::Bool(false)]));
            }
        }
    }
    attrs.extend(index_attrs);
    // In (attrelid, attnum) order, as PostgreSQL's scans through its index
    // give them (psql's `\dp` lists column privileges in that order; an
    // updated row is stored at the heap's end).
    attrs.sort_by_key(|(_, a)| match (&a[0], &a[3]) {
        (Value::Oid(r), Value::Int2(n)) => (*r, *n),
        _ => (0, 0),
    });
    for (_, r) in attrs {
        let [Value::Oid(rel), name, Value::Oid(typ), Value::Int2(num), typmod, notnull, rest @ ..] = r.as_slice() else { continue };
        let ty = Type::from_oid(*typ).unwrap_or(Type::Text);
        // Stored after the first six (crate::catalog::attribute_rel), NULL in older rows.
        let dropped = rest.first() == Some(&Value::Bool(true));
        let identity = match rest.get(1) {
            Some(Value::Text(t)) => t.clone(),
            _ => String::new(),
        };
        let has_missing = matches!(rest.get(2), Some(Value::Text(_)));
        let collatable = matches!(ty, Type::Text | Type::Varchar | Type::Bpchar) || matches!(ty, Type::Array(e) if matches!(e, Type::Text | Type::Varchar | Type::Bpchar));
        out.push(
            Row::new(v)
                .oid("attrelid", *rel)
                .t("attname", &text_of(name))
                .oid("atttypid", if dropped { 0 } else { *typ })
                .i4("attstattarget", -1)
                .i2("attlen", ty.typlen())
                .i2("attnum", *num)
                .i4("attndims", matches!(ty, Type::Array(_)) as i32)
                .i4("attcacheoff", -1)
                .set("atttypmod", typmod.clone())
                .b("attbyval", typbyval(ty))
                .t("attalign", typalign(ty))
                .t("attstorage", typstorage(ty))
                .t("attcompression", "")
                .set("attnotnull", notnull.clone())
                .b("atthasdef", identity.is_empty() && defs.iter().any(|d| d.0 == *rel && d.1 == *num))
                .b("atthasmissing", has_missing)
                .t("attidentity", &identity)
                .t("attgenerated", "")
                .b("attisdropped", dropped)
                .b("attislocal", true)
                .i4("attinhcount", 0)
                .oid("attcollation", if collatable { 100 } else { 0 })
                .set("attacl", match crate::acl::from_stored(rest.get(3)) {
                    Some(acl) => crate::acl::display(&acl, &|o| roles.name(o)),
                    None => Value::Null,
                }),
        );
    }
    Ok(out)
}

fn typbyval(t: Type) -> bool {
    matches!(t, Type::Bool | Type::Int2 | Type::Int4 | Type::Int8 | Type::Oid | Type::Xid | Type::Float4 | Type::Float8 | Type::Date | Type::Time | Type::Timestamp | Type::Timestamptz | Type::Char | Type::Void | Type::PgLsn | Type::Xid8)
}

fn typalign(t: Type) -> &'static str {
    match t {
        Type::Bool | Type::Char | Type::Name | Type::Unknown => "c",
        Type::Int2 | Type::Tid => "s",
        Type::Int8 | Type::Float8 | Type::Time | Type::Timestamp | Type::Timestamptz | Type::Interval | Type::TimeTz | Type::PgLsn | Type::Xid8 => "d",
        Type::Array(e) if typalign(*e) == "d" => "d",
        _ => "i",
    }
}

fn typstorage(t: Type) -> &'static str {
    if t.typlen() == -1 && !t.is_vector() { "x" } else { "p" }
}


/// The I/O function name stem of a type (`int4` -> int4in/int4out...).
fn io_stem(t: Type) -> String {
    match t {
        Type::Date | Type::Time | Type::Timestamp | Type::Timestamptz | Type::Interval | Type::TimeTz | Type::Void => format!("{}_", t.typname()),
        Type::Array(_) => "array_".into(),
        _ => t.typname().to_string(),
    }
}

fn pg_type(v: &View) -> Vec<Row<'_>> {
    let mut all: Vec<Type> = types::TYPES.to_vec();
    all.extend([Type::Name, Type::Char, Type::Xid]);
    all.extend(ferrogres_datum::array::all_array_types());
    all.into_iter()
        .map(|t| {
            let (cat, pref) = t.category();
            let cat = cat.to_string();
            let stem = io_stem(t);
            let (inp, out, rcv, snd) = match t {
                Type::Date | Type::Time | Type::Timestamp | Type::Timestamptz | Type::Interval | Type::TimeTz | Type::Void | Type::Array(_) => {
                    (format!("{stem}in"), format!("{stem}out"), format!("{stem}recv"), format!("{stem}send"))
                }
                _ => (format!("{stem}in"), format!("{stem}out"), format!("{stem}recv"), format!("{stem}send")),
            };
            let elem = match t {
                Type::Array(e) => e.oid(),
                Type::Int2Vector | Type::OidVector => t.elem().map_or(0, |e| e.oid()),
                Type::Name => 18,
                _ => 0,
            };
            let subscript = match t {
                Type::Array(_) | Type::Int2Vector | Type::OidVector => "array_subscript_handler",
                Type::Name => "raw_array_subscript_handler",
                _ => "-",
            };
            let collation = match t {
                Type::Text | Type::Varchar | Type::Bpchar => 100,
                Type::Name => 950,
                Type::Array(Type::Text | Type::Varchar | Type::Bpchar) => 100,
                Type::Array(Type::Name) => 950,
                _ => 0,
            };
            let array = ferrogres_datum::array::array_of(t).map_or(0, |a| a.oid());
            Row::new(v)
                .oid("oid", t.oid())
                .t("typname", t.typname())
                .oid("typnamespace", catalog::PG_CATALOG_NAMESPACE)
                .oid("typowner", BOOTSTRAP_SUPERUSER)
                .i2("typlen", t.typlen())
                .b("typbyval", typbyval(t))
                .t("typtype", if matches!(t, Type::Void | Type::Unknown) && t == Type::Void { "p" } else { "b" })
                .t("typcategory", &cat)
                .b("typispreferred", pref)
                .b("typisdefined", true)
                .t("typdelim", ",")
                .oid("typrelid", 0)
                .t("typsubscript", subscript)
                .oid("typelem", elem)
                .oid("typarray", array)
                .t("typinput", &inp)
                .t("typoutput", &out)
                .t("typreceive", &rcv)
                .t("typsend", &snd)
                .t("typmodin", "-")
                .t("typmodout", "-")
                .t("typanalyze", if matches!(t, Type::Array(_)) { "array_typanalyze" } else { "-" })
                .t("typalign", typalign(t))
                .t("typstorage", typstorage(t))
                .b("typnotnull", false)
                .oid("typbasetype", 0)
                .i4("typtypmod", -1)
                .i4("typndims", 0)
                .oid("typcollation", collation)
        })
        .collect()
}

/// The role name of `oid` (pg_get_userbyid): the built-in roles only, since
/// the executor's functions see no catalog (roles made by CREATE ROLE show as
/// "unknown (OID=n)" here; [`crate::roles::name_of`] reads pg_authid).
pub fn role_name(oid: u32) -> String {
    ROLES.iter().find(|r| r.0 == oid).map_or_else(|| format!("unknown (OID={oid})"), |r| r.1.to_string())
}

/// Catalog and session information functions, evaluated by [`call`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CatFunc {
    /// format_type(oid, int4).
    FormatType,
    /// pg_get_userbyid(oid).
    GetUserById,
    /// pg_encoding_to_char(int4).
    EncodingToChar,
    /// pg_table_is_visible(oid) and the other *_is_visible: every relation is
    /// in pg_catalog or public, both on the search path.
    IsVisible,
    /// has_table_privilege & co., answered per row from the catalog caches
    /// ([`crate::acl::has_privilege`]).
    HasPrivilege(crate::acl::PrivFn),
    /// obj_description, col_description, shobj_description, pg_get_ruledef:
    /// there are no comments and no rules (views: [`crate::view`]).
    NullText,
    /// pg_get_expr(text, oid [, bool]): pg_attrdef.adbin is already the deparsed text.
    GetExpr,
    /// pg_get_indexdef / pg_get_constraintdef: the argument's definition from
    /// the table built at analysis (second argument: text[] of "oid:definition").
    Lookup,
    /// current_schemas(bool).
    CurrentSchemas,
    /// quote_ident(text).
    QuoteIdent,
    /// pg_size_pretty(int8).
    SizePretty,
    /// An OID cast to regclass/regtype/regnamespace/regproc: the name from the
    /// table built at analysis (second argument, "oid:name"), else the number.
    RegName,
    /// pg_relation_size & co.: the size from the table built at analysis
    /// ("oid:bytes"); NULL for an unknown relation.
    Size,
    /// to_regtype / to_regclass / to_regnamespace / to_regproc(text) (NULL
    /// for a name that names nothing), and a text value cast to one of those
    /// types (`error`: PostgreSQL's error for such a name). The second argument
    /// is a table built at analysis, "name:oid" (regclass, regnamespace) or
    /// "name:" (regproc); types are built in and looked up directly.
    ToReg { kind: RegLookup, error: bool },
    /// pg_get_serial_sequence(table, column): the table's OID (regclass input
    /// already applied), the column name, and the table built at analysis
    /// ("table-oid NUL column NUL sequence"); NULL for a column that owns none.
    SerialSequence,
}

/// The object kind of [`CatFunc::ToReg`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegLookup {
    Class,
    Type,
    Namespace,
    Proc,
}

/// Splits a possibly qualified, possibly quoted name as PostgreSQL's
/// stringToQualifiedNameList does: unquoted parts folded to lower case.
pub fn split_qualified_name(s: &str) -> Option<Vec<String>> {
    let mut parts = Vec::new();
    let mut chars = s.trim().chars().peekable();
    loop {
        let mut part = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        part.push('"');
                    }
                    Some('"') => break,
                    Some(c) => part.push(c),
                    None => return None,
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == '.' {
                    break;
                }
                part.push(c.to_ascii_lowercase());
                chars.next();
            }
            part = part.trim().to_string();
        }
        if part.is_empty() {
            return None;
        }
        parts.push(part);
        match chars.next() {
            Some('.') => continue,
            None => return Some(parts),
            Some(_) => return None,
        }
    }
}

/// A type name as regtype input reads it (`integer`, `pg_catalog.int4`,
/// `character varying(10)`, `text[]`, `"char"`): the built-in type, if any.
pub fn parse_type_name(s: &str) -> Option<Type> {
    let s = s.trim();
    let (base, array) = match s.strip_suffix("[]") {
        Some(b) => (b.trim_end(), true),
        None => (s, false),
    };
    // A type modifier does not change the type.
    let base = match base.find('(') {
        Some(i) if base.ends_with(')') => base[..i].trim_end(),
        _ => base,
    };
    let t = if base == "\"char\"" || base == "pg_catalog.\"char\"" {
        Type::Char
    } else {
        let lower = base.to_ascii_lowercase();
        let lower = lower.strip_prefix("pg_catalog.").unwrap_or(&lower);
        let words: Vec<&str> = lower.split_whitespace().collect();
        let name = words.join(" ");
        match name.as_str() {
            // SQL's `char` is character(1); `"char"` (above) is the one-byte type.
            "char" => Type::Bpchar,
            n => Type::from_sql_name(n).or_else(|| ferrogres_datum::array::from_typname(n))?,
        }
    };
    if array {
        ferrogres_datum::array::array_of(t)
    } else {
        Some(t)
    }
}

/// The names regproc input accepts: the built-in functions and the types' I/O
/// functions (pg_type.typinput & co., which pgjdbc compares with
/// `'pg_catalog.array_in'::regproc`).
pub fn regproc_names() -> Vec<String> {
    let mut all: Vec<Type> = types::TYPES.to_vec();
    all.extend([Type::Name, Type::Char, Type::Xid]);
    all.extend(ferrogres_datum::array::all_array_types());
    let mut names: Vec<String> = all
        .into_iter()
        .flat_map(|t| {
            let stem = io_stem(t);
            ["in", "out", "recv", "send"].map(|s| format!("{stem}{s}"))
        })
        .collect();
    names.extend(crate::functions::BUILTINS.iter().map(|b| b.name.to_string()));
    names.sort();
    names.dedup();
    names
}

/// [`CatFunc::ToReg`]: `vals` are the name and the analysis-time table.
pub fn to_reg(kind: RegLookup, error: bool, vals: &[Value]) -> Result<Value> {
    let Value::Text(s) = &vals[0] else { return Ok(Value::Null) };
    let missing = |code: &[u8; 5], what: &str| -> Result<Value> {
        if error {
            Err(SqlError::new(code, format!("{what} \"{s}\" does not exist")))
        } else {
            Ok(Value::Null)
        }
    };
    let table: &[Value] = match vals.get(1) {
        Some(Value::Array(a)) => &a.items[..],
        _ => &[],
    };
    let find = |key: &str| {
        table.iter().find_map(|e| match e {
            Value::Text(x) => x.rsplit_once(':').filter(|(n, _)| *n == key).map(|(_, o)| o.to_string()),
            _ => None,
        })
    };
    match kind {
        RegLookup::Type => match parse_type_name(s) {
            Some(t) => Ok(Value::Oid(t.oid())),
            None => missing(b"42704", "type"),
        },
        RegLookup::Class | RegLookup::Namespace => {
            let Some(parts) = split_qualified_name(s) else {
                return Err(SqlError::new(b"42602", "invalid name syntax"));
            };
            match find(&parts.join(".")).and_then(|o| o.parse::<u32>().ok()) {
                Some(o) => Ok(Value::Oid(o)),
                None if kind == RegLookup::Class => missing(b"42P01", "relation"),
                None => missing(b"42704", "schema"),
            }
        }
        RegLookup::Proc => {
            let Some(parts) = split_qualified_name(s) else {
                return Err(SqlError::new(b"42602", "invalid name syntax"));
            };
            let name = match parts.as_slice() {
                [n] => n,
                [schema, n] if schema == "pg_catalog" => n,
                _ => return missing(b"42883", "function"),
            };
            match find(name) {
                Some(_) => Ok(Value::Text(name.clone())),
                None => missing(b"42883", "function"),
            }
        }
    }
}

/// Evaluates a catalog function.
pub fn call(f: CatFunc, vals: &[Value], env: &mut dyn crate::exec::Env) -> Result<Value> {
    let null = vals.first().is_some_and(Value::is_null);
    Ok(match f {
        CatFunc::FormatType => match &vals[0] {
            Value::Oid(o) => {
                let typmod = match vals.get(1) {
                    Some(Value::Int4(t)) => *t,
                    _ => -1,
                };
                Value::Text(match Type::from_oid(*o) {
                    Some(t) => t.name_with_typmod(typmod),
                    None => "???".into(),
                })
            }
            _ => Value::Null,
        },
        CatFunc::GetUserById => match (&vals[0], vals.get(1)) {
            (Value::Oid(o), Some(Value::Array(table))) => {
                let key = format!("{o}:");
                Value::Text(
                    table
                        .items
                        .iter()
                        .find_map(|e| match e {
                            Value::Text(s) => s.strip_prefix(&key).map(str::to_string),
                            _ => None,
                        })
                        .unwrap_or_else(|| format!("unknown (OID={o})")),
                )
            }
            (Value::Oid(o), _) => Value::Text(role_name(*o)),
            _ => Value::Null,
        },
        CatFunc::HasPrivilege(f) => match env.catalog() {
            Some((backend, snap)) => crate::acl::has_privilege(backend, snap, f, vals)?,
            None => return Err(SqlError::not_supported("privilege inquiry functions outside a query")),
        },
        CatFunc::EncodingToChar => match &vals[0] {
            Value::Int4(6) => Value::Text("UTF8".into()),
            Value::Int4(0) => Value::Text("SQL_ASCII".into()),
            Value::Int4(_) => Value::Text(String::new()),
            _ => Value::Null,
        },
        CatFunc::IsVisible if null => Value::Null,
        CatFunc::IsVisible => match (&vals[0], vals.get(1)) {
            (Value::Oid(o), Some(Value::Array(hidden))) => Value::Bool(!hidden.items.contains(&Value::Oid(*o))),
            _ => Value::Bool(true),
        },
        CatFunc::NullText => Value::Null,
        CatFunc::GetExpr => vals[0].clone(),
        CatFunc::Lookup => {
            let (Value::Oid(o), Value::Array(table)) = (&vals[0], &vals[1]) else { return Ok(Value::Null) };
            // pretty (pg_get_indexdef's third argument): no schema qualification of public tables.
            let pretty = vals.get(2) == Some(&Value::Bool(true));
            let key = match vals.get(3) {
                Some(Value::Int4(c)) if *c != 0 => format!("{o}/{c}:"),
                _ => format!("{o}:"),
            };
            table
                .items
                .iter()
                .find_map(|e| match e {
                    Value::Text(s) => s.strip_prefix(&key).map(|d| {
                        Value::Text(match d.strip_prefix("CHECK ((").and_then(|c| c.strip_suffix("))")) {
                            // A check constraint's pretty form: one level of parentheses.
                            Some(expr) if pretty => format!("CHECK ({expr})"),
                            _ if pretty => d.replacen(" ON public.", " ON ", 1),
                            _ => d.to_string(),
                        })
                    }),
                    _ => None,
                })
                .unwrap_or(Value::Null)
        }
        CatFunc::CurrentSchemas => match (&vals[0], vals.get(1), vals.get(2)) {
            (Value::Bool(implicit), Some(all), Some(explicit)) => {
                if *implicit { all.clone() } else { explicit.clone() }
            }
            (Value::Bool(implicit), _, _) => {
                let mut items = Vec::new();
                if *implicit {
                    items.push(Value::Text("pg_catalog".into()));
                }
                items.push(Value::Text("public".into()));
                Value::Array(Box::new(ferrogres_datum::array::Array::new(Type::Name, items)))
            }
            _ => Value::Null,
        },
        CatFunc::QuoteIdent => match &vals[0] {
            Value::Text(s) => Value::Text(quote_ident(s)),
            _ => Value::Null,
        },
        CatFunc::RegName => {
            let (Value::Oid(o), Value::Array(table)) = (&vals[0], &vals[1]) else { return Ok(Value::Null) };
            let key = format!("{o}:");
            let found = table.items.iter().find_map(|e| match e {
                Value::Text(s) => s.strip_prefix(&key).map(str::to_string),
                _ => None,
            });
            Value::Text(found.unwrap_or_else(|| if *o == 0 { "-".into() } else { o.to_string() }))
        }
        CatFunc::Size => {
            let (Value::Oid(o), Value::Array(table)) = (&vals[0], &vals[1]) else { return Ok(Value::Null) };
            let key = format!("{o}:");
            table
                .items
                .iter()
                .find_map(|e| match e {
                    Value::Text(s) => s.strip_prefix(&key).and_then(|n| n.parse::<i64>().ok()).map(Value::Int8),
                    _ => None,
                })
                .unwrap_or(Value::Null)
        }
        CatFunc::ToReg { kind, error } => to_reg(kind, error, vals)?,
        CatFunc::SerialSequence => {
            let (Value::Oid(o), Value::Text(col), Value::Array(table)) = (&vals[0], &vals[1], &vals[2]) else { return Ok(Value::Null) };
            let key = format!("{o}\0{col}\0");
            table
                .items
                .iter()
                .find_map(|e| match e {
                    Value::Text(s) => s.strip_prefix(&key).map(|seq| Value::Text(seq.to_string())),
                    _ => None,
                })
                .unwrap_or(Value::Null)
        }
        CatFunc::SizePretty => match vals[0].as_i64() {
            Some(n) => Value::Text(size_pretty(n)),
            None => Value::Null,
        },
    })
}

/// quote_ident: quoted unless all lower-case letters, digits and underscores
/// (not starting with a digit) and not a keyword.
pub fn quote_ident(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !is_reserved(s);
    if plain {
        s.to_string()
    } else {
        format!("\"{}\"", s.replace('"', "\"\""))
    }
}

fn is_reserved(s: &str) -> bool {
    // Keywords that need quoting as identifiers (reserved and type/function-name ones).
    const KW: &[&str] = &[
        "all", "analyse", "analyze", "and", "any", "array", "as", "asc", "asymmetric", "both", "case", "cast", "check", "collate", "column",
        "constraint", "create", "current_catalog", "current_date", "current_role", "current_time", "current_timestamp", "current_user",
        "default", "deferrable", "desc", "distinct", "do", "else", "end", "except", "false", "fetch", "for", "foreign", "from", "grant",
        "group", "having", "in", "initially", "intersect", "into", "lateral", "leading", "limit", "localtime", "localtimestamp", "not",
        "null", "offset", "on", "only", "or", "order", "placing", "primary", "references", "returning", "select", "session_user", "some",
        "symmetric", "table", "then", "to", "trailing", "true", "union", "unique", "user", "using", "variadic", "when", "where", "window",
        "with",
    ];
    KW.contains(&s)
}

/// pg_size_pretty(bigint) as PostgreSQL 15 rounds it.
pub fn size_pretty(size: i64) -> String {
    let half_rounded = |x: i64| (x + if x < 0 { -1 } else { 1 }) / 2;
    let limit: i64 = 10 * 1024;
    let limit2: i64 = limit * 2 - 1;
    if size.abs() < limit {
        return format!("{size} bytes");
    }
    let mut size = size >> 9; // one extra bit for rounding
    for unit in ["kB", "MB", "GB", "TB"] {
        if size.abs() < limit2 {
            return format!("{} {unit}", half_rounded(size));
        }
        size >>= 10;
    }
    format!("{} PB", half_rounded(size))
}

/// `oid:bytes` of every relation for size function `func` (pg_relation_size:
/// the main fork; pg_table_size: with the TOAST relation and its chunk index; pg_indexes_size: the
/// indexes; pg_total_relation_size: all of them), from the files' lengths now.
pub fn relation_sizes(backend: &Backend, snap: &Snapshot, func: &str) -> Result<Vec<String>> {
    use ferrogres_engine::storage::ForkNumber;
    let classes = scan_rows(backend, &catalog::class_rel(), snap)?;
    let indexes = scan_rows(backend, &crate::index::index_rel(), snap)?;
    let smgr = &backend.engine().smgr;
    let bytes = |filenode: u32| -> Result<i64> {
        if filenode == 0 {
            return Ok(0);
        }
        Ok(smgr.nblocks(catalog::locator(filenode), ForkNumber::Main)? as i64 * ferrogres_engine::config::BLCKSZ as i64)
    };
    let filenode = |oid: &Value| classes.iter().find(|(_, c)| &c[0] == oid).and_then(|(_, c)| if let Value::Oid(f) = c[3] { Some(f) } else { None });
    let mut out = Vec::new();
    for (_, c) in &classes {
        let (Value::Oid(oid), Value::Oid(node), Value::Oid(toast)) = (&c[0], &c[3], &c[4]) else { continue };
        let main = bytes(*node)?;
        // The TOAST relation with its chunk index (the engine keeps it in a fork).
        let toast_index = if *toast == 0 {
            0
        } else {
            smgr.nblocks(catalog::locator(*toast), ForkNumber::ToastIndex)? as i64 * ferrogres_engine::config::BLCKSZ as i64
        };
        let table = main + bytes(*toast)? + toast_index;
        let mut idx = 0;
        for (_, i) in indexes.iter().filter(|(_, i)| i[1] == c[0]) {
            idx += bytes(filenode(&i[0]).unwrap_or(0))?;
        }
        let n = match func {
            "pg_relation_size" => main,
            "pg_table_size" => table,
            "pg_indexes_size" => idx,
            _ => table + idx,
        };
        out.push(format!("{oid}:{n}"));
    }
    Ok(out)
}

/// `oid:definition` of every index (pg_get_indexdef) as `snap` sees them, and
/// `oid/n:column` for each of its columns (pg_get_indexdef(oid, n, pretty)).
/// pg_get_function_result / pg_get_function_arguments of each SQL function
/// as "oid:text" (`result`: the first, else the second), as PostgreSQL
/// prints them: `integer`, `SETOF integer`, `TABLE(a integer, b text)`;
/// `x integer, y text DEFAULT 'a'::text` (defaults as written here).
pub fn function_texts(backend: &Backend, snap: &Snapshot, result: bool) -> Result<Vec<String>> {
    let named = |n: &str, t: Type| if n.is_empty() { t.name_with_typmod(-1) } else { format!("{n} {}", t.name_with_typmod(-1)) };
    Ok(crate::sqlfunc::all(backend, snap)?
        .iter()
        .map(|f| {
            let text = if result {
                match (f.out.is_empty(), f.retset) {
                    (false, _) => format!("TABLE({})", f.out.iter().map(|(n, t)| named(n, *t)).collect::<Vec<_>>().join(", ")),
                    (true, true) => format!("SETOF {}", f.ret.name_with_typmod(-1)),
                    (true, false) => f.ret.name_with_typmod(-1),
                }
            } else {
                let args = f.args.iter().zip(&f.arg_names).zip(&f.defaults).map(|((t, n), d)| match d {
                    Some(d) => format!("{} DEFAULT {d}", named(n, *t)),
                    None => named(n, *t),
                });
                args.collect::<Vec<_>>().join(", ")
            };
            format!("{}:{text}", f.oid)
        })
        .collect())
}

pub fn index_defs(backend: &Backend, snap: &Snapshot) -> Result<Vec<String>> {
    let classes = scan_rows(backend, &catalog::class_rel(), snap)?;
    let attrs = scan_rows(backend, &catalog::cat(catalog::PG_ATTRIBUTE, &[Type::Oid, Type::Text, Type::Oid, Type::Int2, Type::Int4, Type::Bool]), snap)?;
    let name_of = |oid: &Value| classes.iter().find(|(_, c)| &c[0] == oid).map(|(_, c)| (text_of(&c[1]), c[2].clone()));
    let mut out = Vec::new();
    for (_, r) in scan_rows(backend, &crate::index::index_rel(), snap)? {
        let (Some((iname, _)), Some((tname, tns))) = (name_of(&r[0]), name_of(&r[1])) else { continue };
        let schema = if tns == Value::Oid(catalog::PUBLIC_NAMESPACE) { "public" } else { "pg_catalog" };
        let options: Vec<i16> = text_of(&r[7]).split_whitespace().filter_map(|x| x.parse().ok()).collect();
        let nkey = r[3].as_i64().unwrap_or(0) as usize;
        let mut keys = Vec::new();
        let mut include = Vec::new();
        for (k, num) in text_of(&r[6]).split_whitespace().enumerate() {
            let num: i16 = num.parse().unwrap_or(0);
            let col = attrs
                .iter()
                .find(|(_, a)| a[0] == r[1] && a[3] == Value::Int2(num))
                .map_or_else(|| format!("{num}"), |(_, a)| quote_ident(&text_of(&a[1])));
            // pg_get_indexdef(oid, k + 1, ...): the column alone.
            out.push(format!("{}/{}:{col}", text_of(&r[0]), k + 1));
            if k >= nkey {
                include.push(col);
                continue;
            }
            let opt = options.get(k).copied().unwrap_or(0);
            let mut c = col;
            match (opt & 1 != 0, opt & 2 != 0) {
                (true, false) => c.push_str(" DESC NULLS LAST"),
                (true, true) => c.push_str(" DESC"),
                (false, true) => c.push_str(" NULLS FIRST"),
                _ => {}
            }
            keys.push(c);
        }
        let unique = if r[4] == Value::Bool(true) { "UNIQUE " } else { "" };
        let am = match classes.iter().find(|(_, c)| c[0] == r[0]).and_then(|(_, c)| c.get(7)) {
            Some(relam) if index_am(relam) == crate::hash_index::HASH_AM_OID => "hash",
            _ => "btree",
        };
        let mut def = format!("CREATE {unique}INDEX {} ON {schema}.{} USING {am} ({})", quote_ident(&iname), quote_ident(&tname), keys.join(", "));
        if !include.is_empty() {
            def.push_str(&format!(" INCLUDE ({})", include.join(", ")));
        }
        if let Some(Value::Text(opts)) = r.get(8) {
            // pg_get_indexdef quotes each value: WITH (fillfactor='60').
            let opts: Vec<String> = opts.split(',').map(|o| match o.split_once('=') {
                Some((k, v)) => format!("{k}='{v}'"),
                None => o.to_string(),
            }).collect();
            def.push_str(&format!(" WITH ({})", opts.join(", ")));
        }
        out.push(format!("{}:{def}", text_of(&r[0])));
    }
    Ok(out)
}

/// `oid:definition` of every constraint (pg_get_constraintdef).
pub fn constraint_defs(backend: &Backend, snap: &Snapshot) -> Result<Vec<String>> {
    let attrs = scan_rows(backend, &catalog::cat(catalog::PG_ATTRIBUTE, &[Type::Oid, Type::Text, Type::Oid, Type::Int2, Type::Int4, Type::Bool]), snap)?;
    let attname = |rel: &Value, num: i16| {
        attrs.iter().find(|(_, a)| &a[0] == rel && a[3] == Value::Int2(num)).map_or_else(|| num.to_string(), |(_, a)| quote_ident(&text_of(&a[1])))
    };
    let classes = scan_rows(backend, &catalog::class_rel(), snap)?;
    let hidden: std::collections::HashSet<u32> = crate::namespace::invisible_relations(backend, snap)?.into_iter().collect();
    let schemas: std::collections::HashMap<u32, String> = crate::namespace::namespaces(backend, snap)?.into_iter().collect();
    // A relation's name as PostgreSQL prints it in a definition: qualified
    // when the search path would not find it.
    let relname = |oid: u32| -> String {
        let Some((_, c)) = classes.iter().find(|(_, c)| c[0] == Value::Oid(oid)) else { return oid.to_string() };
        let name = quote_ident(&text_of(&c[1]));
        match (&c[2], hidden.contains(&oid)) {
            (Value::Oid(ns), true) => format!("{}.{name}", quote_ident(schemas.get(ns).map_or("?", String::as_str))),
            _ => name,
        }
    };
    let mut out = Vec::new();
    for (_, r) in scan_rows(backend, &crate::index::constraint_rel(), snap)? {
        let kind = match text_of(&r[3]).as_str() {
            "p" => "PRIMARY KEY",
            "u" => "UNIQUE",
            // The stored text of the expression, with the outer parentheses
            // of the non-pretty form (Lookup drops them for pretty).
            "c" => {
                out.push(format!("{}:CHECK (({}))", text_of(&r[0]), text_of(&r[7])));
                continue;
            }
            "f" => {
                let Some(fk) = crate::foreign_key::decode(&text_of(&r[1]), 0, &text_of(&r[6]), &text_of(&r[7])) else { continue };
                let cols: Vec<String> = fk.cols.iter().map(|&c| attname(&r[4], c as i16 + 1)).collect();
                let pcols: Vec<String> = fk.parent_cols.iter().map(|&c| attname(&Value::Oid(fk.parent), c as i16 + 1)).collect();
                let mut def = format!("FOREIGN KEY ({}) REFERENCES {}({})", cols.join(", "), relname(fk.parent), pcols.join(", "));
                for (what, action) in [("UPDATE", fk.on_update), ("DELETE", fk.on_delete)] {
                    let action = match action {
                        'r' => "RESTRICT",
                        'c' => "CASCADE",
                        'n' => "SET NULL",
                        'd' => "SET DEFAULT",
                        _ => continue,
                    };
                    def += &format!(" ON {what} {action}");
                }
                if !fk.validated {
                    def += " NOT VALID";
                }
                out.push(format!("{}:{def}", text_of(&r[0])));
                continue;
            }
            _ => continue,
        };
        let cols: Vec<String> = text_of(&r[6])
            .trim_matches(|c| c == '{' || c == '}')
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter_map(|x| x.parse::<i16>().ok())
            .map(|num| attname(&r[4], num))
            .collect();
        out.push(format!("{}:{kind} ({})", text_of(&r[0]), cols.join(", ")));
    }
    Ok(out)
}

/// pg_indexes: each index's table, name and pg_get_indexdef text.
fn pg_indexes<'v>(v: &'v View, backend: &Backend, snap: &Snapshot) -> Result<Vec<Row<'v>>> {
    let classes = scan_rows(backend, &catalog::class_rel(), snap)?;
    let defs = index_defs(backend, snap)?;
    let mut out = Vec::new();
    for (_, r) in scan_rows(backend, &crate::index::index_rel(), snap)? {
        let class = |oid: &Value| classes.iter().find(|(_, c)| &c[0] == oid).map(|(_, c)| c.clone());
        let (Some(ic), Some(tc), Value::Oid(ioid)) = (class(&r[0]), class(&r[1]), &r[0]) else { continue };
        let prefix = format!("{ioid}:");
        let Some(def) = defs.iter().find_map(|d| d.strip_prefix(&prefix)) else { continue };
        let ns = match &tc[2] { Value::Oid(o) => *o, _ => 0 };
        let schema = crate::namespace::namespace_name(backend, snap, ns)?.unwrap_or_default();
        out.push(
            Row::new(v)
                .t("schemaname", &schema)
                .t("tablename", &text_of(&tc[1]))
                .t("indexname", &text_of(&ic[1]))
                .set("tablespace", Value::Null)
                .t("indexdef", def),
        );
    }
    Ok(out)
}

/// pg_views and information_schema.views ([`crate::view`]).
fn view_rows<'v>(v: &'v View, backend: &Backend, snap: &Snapshot) -> Result<Vec<Row<'v>>> {
    let dbname = crate::database::current_name(backend, snap)?;
    let mut out = Vec::new();
    for (oid, ns, name, def) in crate::view::all_views(backend, snap)? {
        let schema = crate::namespace::namespace_name(backend, snap, ns)?.unwrap_or_default();
        out.push(if v.name == "pg_views" {
            Row::new(v).t("schemaname", &schema).t("viewname", &name).t("viewowner", "postgres").t("definition", &def)
        } else {
            let upd = if crate::view::auto_updatable(&def) { "YES" } else { "NO" };
            Row::new(v)
                .t("table_catalog", &dbname)
                .t("table_schema", &schema)
                .t("table_name", &name)
                .t("view_definition", &def)
                .t("check_option", crate::view::check_option_of(backend, snap, oid)?)
                .t("is_updatable", upd)
                .t("is_insertable_into", upd)
                .t("is_trigger_updatable", "NO")
                .t("is_trigger_deletable", "NO")
                .t("is_trigger_insertable_into", "NO")
        });
    }
    Ok(out)
}

/// `oid:definition` of every view (pg_get_viewdef) as `snap` sees them.
pub fn view_defs(backend: &Backend, snap: &Snapshot) -> Result<Vec<String>> {
    Ok(crate::view::all_views(backend, snap)?.into_iter().map(|(oid, _, _, def)| format!("{oid}:{def}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_idents() {
        assert_eq!(size_pretty(10239), "10239 bytes");
        assert_eq!(size_pretty(10240), "10 kB");
        assert_eq!(size_pretty(8192 * 1000), "8000 kB");
        assert_eq!(size_pretty(1_000_000_000), "954 MB");
        assert_eq!(quote_ident("abc_1"), "abc_1");
        assert_eq!(quote_ident("Abc"), "\"Abc\"");
        assert_eq!(quote_ident("select"), "\"select\"");
        assert_eq!(deparse_const(Type::Int4, -1, "42"), "42");
        assert_eq!(deparse_const(Type::Int4, -1, "-1"), "'-1'::integer");
        assert_eq!(deparse_const(Type::Varchar, 14, "x"), "'x'::character varying");
    }

    #[test]
    fn every_view_has_unique_columns() {
        for v in VIEWS {
            let mut names: Vec<&str> = v.columns.iter().map(|c| c.0).collect();
            names.sort();
            names.dedup();
            assert_eq!(names.len(), v.columns.len(), "{}", v.name);
        }
    }
}
