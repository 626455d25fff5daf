-- md5 and the SHA-2 functions (PostgreSQL 11+): text and bytea inputs, NULL,
-- the empty input, and the signature PostgreSQL lacks (sha256(text)).
SELECT md5('abc'), md5(''), md5('\x00'::bytea), md5(NULL::text);
SELECT sha224('abc'), sha224('');
SELECT sha256('abc'::bytea), sha256(''::bytea), sha256(NULL);
SELECT sha384(''), sha384('\x00ff'::bytea);
SELECT sha512('\x00ff'::bytea), length(sha512('x'));
SELECT pg_typeof(sha256('a')), sha256('abc') = '\xba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'::bytea AS matches;
SELECT sha256('abc'::text);
SELECT sha224(repeat('a', 10000)::bytea) = sha224(repeat('a', 10000)::bytea) AS stable;
