-- encode/decode: hex, base64 (line breaks every 76 characters), escape;
-- blanks in the input, format names in any case, and PostgreSQL's errors.
SELECT encode('\x00ff10'::bytea, 'hex'), encode('', 'hex'), encode('abc', 'HEX');
SELECT decode('00FF10', 'hex'), decode(' 41 42 ', 'hex'), decode('', 'hex');
SELECT decode('4', 'hex');
SELECT decode('4g', 'hex');
SELECT encode('abcdefg', 'base64'), encode('ab', 'base64'), encode('a', 'base64');
SELECT encode(repeat('a', 57)::bytea, 'base64');
SELECT encode(repeat('xyz', 40)::bytea, 'base64');
SELECT decode('YWJjZGVmZw==', 'base64'), decode('YW Jj
ZA==', 'base64'), decode('', 'base64');
SELECT decode('YWJ', 'base64');
SELECT decode('YW=j', 'base64');
SELECT decode('Y===', 'base64');
SELECT decode('YW*j', 'base64');
SELECT encode('\x00015c41ff'::bytea, 'escape'), encode('a\\b', 'escape');
SELECT decode('a\\b\001\377', 'escape'), decode('plain', 'escape');
SELECT decode('bad\9', 'escape');
SELECT encode('abc', 'rot13');
SELECT decode('abc', 'Base32');
SELECT encode(NULL, 'hex'), decode(NULL, 'hex'), encode('a', NULL);
SELECT decode(encode(decode(md5('x'), 'hex'), 'base64'), 'base64') = decode(md5('x'), 'hex') AS round_trip;
