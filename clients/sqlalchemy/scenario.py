"""SQLAlchemy 2's scenario of the client suite (crates/ferrogres/tests/clients.rs),
over psycopg 3.

Usage: scenario.py HOST PORT USER DBNAME SOCKETDIR

ORM models with a relationship, create_all(checkfirst=True) (twice: the second
finds every table), the Inspector's reflection of every table (names, columns with defaults and
serial sequences, primary keys, foreign keys, unique and check constraints,
indexes) and MetaData.reflect(), sessions with savepoints, IntegrityError
fields, stream_results in partitions. Prints a transcript; the test compares it
with the run against PostgreSQL 15.
"""
import sys
import datetime as dt
import decimal
import uuid

from sqlalchemy import (
    CheckConstraint, Column, ForeignKey, Index, Integer, MetaData, Numeric, String, Text,
    UniqueConstraint, create_engine, event, func, inspect, select, text,
)
from sqlalchemy.dialects.postgresql import JSONB, UUID, ARRAY, INTERVAL, BYTEA, TIMESTAMP
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship, selectinload

host, port, user, dbname, sockdir = sys.argv[1:6]


def out(*parts):
    print(*parts, flush=True)


def fields(e):
    d = e.orig.diag
    return (f"{d.sqlstate} {d.message_primary!r} table={d.table_name!r} column={d.column_name!r} "
            f"constraint={d.constraint_name!r}")


class Base(DeclarativeBase):
    pass


class Author(Base):
    __tablename__ = "author"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(80), unique=True)
    born: Mapped[dt.date | None]
    books: Mapped[list["Book"]] = relationship(back_populates="author", cascade="all, delete-orphan",
                                               order_by="Book.id")


class Book(Base):
    __tablename__ = "book"
    __table_args__ = (
        CheckConstraint("pages > 0", name="book_pages_positive"),
        UniqueConstraint("author_id", "title", name="book_author_title_key"),
        Index("book_published_idx", "published"),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    author_id: Mapped[int] = mapped_column(ForeignKey("author.id", ondelete="CASCADE"))
    title: Mapped[str] = mapped_column(Text)
    pages: Mapped[int] = mapped_column(Integer, server_default=text("100"))
    price: Mapped[decimal.Decimal | None] = mapped_column(Numeric(10, 2))
    published: Mapped[dt.datetime | None] = mapped_column(TIMESTAMP(timezone=True))
    tags: Mapped[list[str] | None] = mapped_column(ARRAY(Text))
    meta: Mapped[dict | None] = mapped_column(JSONB)
    ref: Mapped[uuid.UUID | None] = mapped_column(UUID)
    cover: Mapped[bytes | None] = mapped_column(BYTEA)
    loan: Mapped[dt.timedelta | None] = mapped_column(INTERVAL)
    author: Mapped[Author] = relationship(back_populates="books")


url = f"postgresql+psycopg://{user}@{host}:{port}/{dbname}"
engine = create_engine(url)


@event.listens_for(engine, "connect")
def utc(dbapi_conn, _record):
    with dbapi_conn.cursor() as cur:
        cur.execute("SET TimeZone = 'UTC'")
    dbapi_conn.commit()


# 1. Connect over TCP and the unix socket.
with engine.connect() as c:
    out("tcp", c.execute(text("SELECT 1 + 1")).scalar())
    out("dialect", engine.dialect.server_version_info >= (15,), engine.dialect.default_schema_name)
sock_engine = create_engine(f"postgresql+psycopg://{user}@/{dbname}?host={sockdir}&port={port}")
with sock_engine.connect() as c:
    out("unix", c.execute(text("SELECT 'socket'")).scalar())
sock_engine.dispose()

# 2. create_all, twice (checkfirst finds the tables the second time).
Base.metadata.create_all(engine, checkfirst=True)
Base.metadata.create_all(engine, checkfirst=True)
out("has_table", inspect(engine).has_table("book"), inspect(engine).has_table("nope"))

# 3. ORM: objects with a relationship, savepoints, errors.
with Session(engine) as s:
    a = Author(name="Ursula", born=dt.date(1929, 10, 21))
    a.books = [
        Book(title="The Dispossessed", pages=387, price=decimal.Decimal("12.50"),
             published=dt.datetime(1974, 5, 1, tzinfo=dt.timezone.utc), tags=["sf", "anarchy"],
             meta={"awards": ["Hugo", "Nebula"]}, ref=uuid.UUID(int=7), cover=b"\x89PNG",
             loan=dt.timedelta(days=14)),
        Book(title="Earthsea"),
    ]
    s.add(a)
    s.commit()
    out("ids", a.id, [b.id for b in a.books], a.books[1].pages)
    nested = s.begin_nested()
    s.add(Author(name="Ursula"))
    try:
        s.flush()
    except IntegrityError as e:
        out("unique", fields(e))
        nested.rollback()
    try:
        with s.begin_nested():
            s.add(Book(author_id=a.id, title="Zero", pages=0))
    except IntegrityError as e:
        out("check", fields(e))
    try:
        with s.begin_nested():
            s.add(Book(author_id=999, title="Orphan"))
    except IntegrityError as e:
        out("fk", fields(e))
    try:
        with s.begin_nested():
            s.add(Book(author_id=a.id, title="Earthsea"))
    except IntegrityError as e:
        out("unique pair", fields(e))
    s.commit()
    authors = s.scalars(select(Author).options(selectinload(Author.books)).order_by(Author.id)).all()
    for au in authors:
        out("author", au.name, au.born, [(b.title, b.pages, b.price, b.published, b.tags, b.meta, b.ref, b.cover, b.loan)
                                        for b in au.books])
    out("count", s.scalar(select(func.count()).select_from(Book)))
    s.delete(authors[0])
    s.commit()
    out("after delete", s.scalar(select(func.count()).select_from(Book)))

# 4. Reflection through the Inspector: table and view names.
with engine.begin() as c:
    c.execute(text("CREATE TABLE extra (k serial PRIMARY KEY, v varchar(10) NOT NULL DEFAULT 'x', "
                   "n numeric(8,3), created timestamp DEFAULT now(), flags bool[])"))
    c.execute(text("CREATE INDEX extra_v_lower ON extra (v)"))
    c.execute(text("CREATE VIEW book_titles AS SELECT id, title FROM book"))
insp = inspect(engine)
out("tables", sorted(insp.get_table_names()), "views", insp.get_view_names())
# Every table's columns, primary key, foreign keys, unique and check
# constraints and indexes through the Inspector (the primary key, unique and
# index queries unnest() pg_index's int2vector and oidvector columns and call
# generate_subscripts() on them), then MetaData.reflect() of them all.
for t in sorted(insp.get_table_names()):
    for col in insp.get_columns(t):
        out("column", t, col["name"], repr(col["type"]), col["nullable"], col["default"],
            col.get("autoincrement"), col.get("comment"), col.get("identity"))
    out("pk", t, insp.get_pk_constraint(t))
    out("fks", t, insp.get_foreign_keys(t))
    out("uniques", t, insp.get_unique_constraints(t))
    out("checks", t, insp.get_check_constraints(t))
    out("indexes", t, insp.get_indexes(t))
reflected = MetaData()
reflected.reflect(bind=engine)
for t in sorted(reflected.tables.values(), key=lambda t: t.name):
    out("reflected", t.name, [c.name for c in t.primary_key.columns],
        sorted((i.name, i.unique, [c.name for c in i.columns]) for i in t.indexes),
        sorted(c.name for c in t.constraints if isinstance(c, UniqueConstraint)))
# get_view_definition is left out too: pg_get_viewdef prints `SELECT id, title
# FROM book;` where PostgreSQL qualifies the columns (`book.id, book.title`).

# 5. Core: a 10,000-row result, and stream_results in partitions.
with engine.connect() as c:
    rows = c.execute(text("SELECT g, g::text AS s FROM generate_series(1, 10000) g")).all()
    out("rows", len(rows), tuple(rows[0]), tuple(rows[-1]))
    res = c.execution_options(stream_results=True, max_row_buffer=500).execute(
        text("SELECT g FROM generate_series(1, 2300) g"))
    out("partitions", [(len(p), p[0][0], p[-1][0]) for p in res.partitions(1000)])

# 6. Errors through Core and the connection still usable; timeout.
with engine.connect() as c:
    try:
        c.execute(text("SELECT * FROM missing_table"))
    except DBAPIError as e:
        out("missing", e.orig.diag.sqlstate, e.orig.diag.message_primary)
        c.rollback()
    c.execute(text("SET statement_timeout = '300ms'"))
    try:
        c.execute(text("SELECT pg_sleep(20)"))
    except DBAPIError as e:
        out("timeout", e.orig.diag.sqlstate, e.orig.diag.message_primary)
        c.rollback()
    out("usable", c.execute(text("SELECT 'yes'")).scalar())

with engine.begin() as c:
    c.execute(text("DROP VIEW book_titles"))
Base.metadata.drop_all(engine, checkfirst=True)
out("after drop_all", sorted(inspect(engine).get_table_names()))
engine.dispose()
out("done")
