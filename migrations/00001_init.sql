-- The catalog index: one database file per catalog and content digest.
-- Names (package, channel, bundle) are the keys, as in FBC itself, so blobs can
-- be inserted in whatever order the catalog lists them without resolving ids.
-- Secondary indexes are created by 00002 after the bulk load is done, the
-- catalog's counts by 00003.

CREATE TABLE catalog_info (
    id             INTEGER PRIMARY KEY CHECK (id = 1),
    source_ref     TEXT    NOT NULL,
    content_digest TEXT    NOT NULL,
    built_at       TEXT    NOT NULL,
    all_size       INTEGER NOT NULL DEFAULT 0,
    -- Digest of the migrations that built this file: a file built by another
    -- schema is rebuilt rather than read, even for the same content.
    schema_digest  TEXT    NOT NULL,
    -- How the file was built (index.BuildMode): "full" or "incremental",
    -- why a build was full although a previous index was offered, and how
    -- many packages were parsed and validated anew.
    build_mode       TEXT    NOT NULL DEFAULT 'full',
    build_reason     TEXT    NOT NULL DEFAULT '',
    packages_rebuilt INTEGER NOT NULL DEFAULT 0
);

-- Every blob in walk order. The blobs' bytes are not here: the build writes
-- them, exactly as catalogd serves them (declcfg.Meta encoding,
-- newline-terminated), into the content file beside this database, which is
-- the /all stream itself. offset is the blob's byte offset in that file and
-- length its size, so an answer of whole blobs is byte ranges of the file,
-- copied to the client without passing through SQLite or memory.
CREATE TABLE blobs (
    id      INTEGER PRIMARY KEY,
    schema  TEXT    NOT NULL,
    package TEXT    NOT NULL DEFAULT '',
    name    TEXT    NOT NULL DEFAULT '',
    offset  INTEGER NOT NULL,
    length  INTEGER NOT NULL
);

-- A rowid table, unlike the small-row tables below: its rows hold icons of
-- kilobytes, which spill onto overflow pages, and SQLite reads a whole
-- spilled row at every step of a search through a WITHOUT ROWID table's
-- B-tree (joining it cost providers answers milliseconds); here searches go
-- through the small name index. icon_data comes last so that reading the
-- other columns never follows the icon's overflow pages.
CREATE TABLE packages (
    name            TEXT NOT NULL UNIQUE,
    default_channel TEXT NOT NULL DEFAULT '',
    description     TEXT NOT NULL DEFAULT '',
    icon_media_type TEXT NOT NULL DEFAULT '',
    -- What a console lists (index.Display as JSON), from the olm.csv.metadata
    -- of the default channel's head, filled after the load.
    display         TEXT,
    -- digest identifies the package's content: sha256 over the sorted
    -- sha256s of every blob of the package (its olm.package blob and every
    -- blob, of any schema, whose package is this one), each taken over the
    -- blob's schema, name and canonical bytes. Equal content gives equal
    -- digests whatever the files' layout, format or order (see
    -- index.PackageDigest).
    digest          TEXT NOT NULL DEFAULT '',
    icon_data       BLOB
);

CREATE TABLE channels (
    id           INTEGER PRIMARY KEY,
    package      TEXT NOT NULL,
    name         TEXT NOT NULL,
    properties   TEXT NOT NULL DEFAULT '[]',
    -- head is the single entry no other entry replaces or skips; when there
    -- is not exactly one, head is NULL and head_problem names the candidates.
    head         TEXT,
    head_problem TEXT,
    UNIQUE (package, name)
);

CREATE TABLE channel_entries (
    id         INTEGER PRIMARY KEY,
    package    TEXT    NOT NULL,
    channel    TEXT    NOT NULL,
    position   INTEGER NOT NULL,
    bundle     TEXT    NOT NULL,
    replaces   TEXT    NOT NULL DEFAULT '',
    skip_range TEXT    NOT NULL DEFAULT ''
);

CREATE TABLE channel_entry_skips (
    entry_id INTEGER NOT NULL,
    package  TEXT    NOT NULL,
    skip     TEXT    NOT NULL
);

CREATE TABLE bundles (
    id           INTEGER PRIMARY KEY,
    package      TEXT    NOT NULL,
    name         TEXT    NOT NULL,
    version      TEXT    NOT NULL DEFAULT '',
    release      TEXT    NOT NULL DEFAULT '',
    image        TEXT    NOT NULL DEFAULT '',
    -- The bundle's blob, which also holds its property values.
    blob_id      INTEGER NOT NULL,
    -- Sortable version: the numeric parts, and version_rank, the bundle's place
    -- in semver order within its package (0 = lowest).
    ver_major    INTEGER,
    ver_minor    INTEGER,
    ver_patch    INTEGER,
    ver_pre      TEXT    NOT NULL DEFAULT '',
    version_rank INTEGER NOT NULL DEFAULT 0,
    -- The channels that list the bundle, by name, as a JSON array: computed
    -- once at build, so a page of bundles is one indexed range read rather
    -- than a join per request.
    channels     TEXT    NOT NULL DEFAULT '[]',
    UNIQUE (package, name)
);

-- The tables of a bundle's parts below are, like properties, kept in
-- (bundle_id, position) order (WITHOUT ROWID) rather than beside an index on
-- bundle_id. position is the place in the bundle's list: of related images,
-- or of properties for the GVKs and packages taken from them.
CREATE TABLE related_images (
    bundle_id INTEGER NOT NULL,
    position  INTEGER NOT NULL,
    name      TEXT    NOT NULL DEFAULT '',
    image     TEXT    NOT NULL,
    PRIMARY KEY (bundle_id, position)
) WITHOUT ROWID;

-- Every property of every bundle. A property's value is a byte range of its
-- bundle's blob (value_start, value_length), not a copy: values are most of
-- a catalog's bytes and would otherwise be stored twice. value holds the
-- JSON itself only when there is no range (a property without a value).
-- Rows are small and always looked up by bundle, so the table is kept in
-- (bundle_id, position) order itself (WITHOUT ROWID) rather than beside an
-- index: one B-tree to write and to check instead of two. Bundle ids only
-- grow during a build, so rows are appended.
CREATE TABLE properties (
    bundle_id    INTEGER NOT NULL,
    position     INTEGER NOT NULL,
    type         TEXT    NOT NULL,
    value        TEXT,
    value_start  INTEGER,
    value_length INTEGER,
    PRIMARY KEY (bundle_id, position)
) WITHOUT ROWID;

-- Where each property of a bundle stands in its blob (fbc.PropertySpans: a
-- few varints per property), so that OLM v0's ListBundles reads a bundle's
-- properties by slicing its blob instead of scanning past its objects
-- (kilobytes of CSV metadata and base64 per bundle, most of the blob). A
-- bundle whose blob the scanner declines has no row; it is scanned. Keyed
-- by bundle id (the rowid), so that reading it beside the bundle is one
-- lookup.
CREATE TABLE property_spans (
    bundle_id INTEGER PRIMARY KEY,
    spans     BLOB    NOT NULL
);

CREATE TABLE provided_gvks (
    bundle_id INTEGER NOT NULL,
    position  INTEGER NOT NULL,
    grp       TEXT    NOT NULL,
    version   TEXT    NOT NULL,
    kind      TEXT    NOT NULL,
    PRIMARY KEY (bundle_id, position)
) WITHOUT ROWID;

CREATE TABLE required_gvks (
    bundle_id INTEGER NOT NULL,
    position  INTEGER NOT NULL,
    grp       TEXT    NOT NULL,
    version   TEXT    NOT NULL,
    kind      TEXT    NOT NULL,
    PRIMARY KEY (bundle_id, position)
) WITHOUT ROWID;

CREATE TABLE required_packages (
    bundle_id     INTEGER NOT NULL,
    position      INTEGER NOT NULL,
    package_name  TEXT    NOT NULL,
    version_range TEXT    NOT NULL,
    PRIMARY KEY (bundle_id, position)
) WITHOUT ROWID;

-- schema is olm.package, olm.channel or olm.bundle; name is empty for olm.package.
-- blob_id is the olm.deprecations blob the entry comes from.
CREATE TABLE deprecations (
    package TEXT    NOT NULL,
    schema  TEXT    NOT NULL,
    name    TEXT    NOT NULL DEFAULT '',
    message TEXT    NOT NULL,
    blob_id INTEGER NOT NULL
);

-- Validation problems found while building: the package still answers.
-- position is where in the catalog the blob concerned starts, as
-- path:line:column from the catalog's root.
CREATE TABLE problems (
    id       INTEGER PRIMARY KEY,
    package  TEXT NOT NULL,
    position TEXT NOT NULL,
    message  TEXT NOT NULL
);

-- Full-text search over what a console shows of a package.
CREATE VIRTUAL TABLE package_search USING fts5(
    name, display_name, keywords, provider, description,
    tokenize = 'porter unicode61'
);

-- Every catalog file, in walk order (id), with what of this index came
-- from it, so that the next build of the catalog tells the files that did
-- not change (same path, same sha256) and reuses their part of this index
-- rather than parsing them again (an incremental build, see index.Build).
-- A file's blobs, bundles and channel entries have consecutive ids,
-- first_* and the counts after them (first_* is where the next id
-- stood when the file began, also for none); content_* is its blobs'
-- byte range of the content file, gzip_* its segment of the gzip copy
-- (which compresses each file apart) and gzip_crc the CRC-32 of the
-- bytes that segment holds.
CREATE TABLE files (
    id             INTEGER PRIMARY KEY,
    path           TEXT    NOT NULL,
    sha256         BLOB    NOT NULL,
    content_offset INTEGER NOT NULL,
    content_length INTEGER NOT NULL,
    gzip_offset    INTEGER NOT NULL,
    gzip_length    INTEGER NOT NULL,
    gzip_crc       INTEGER NOT NULL,
    first_blob     INTEGER NOT NULL,
    blobs          INTEGER NOT NULL,
    first_bundle   INTEGER NOT NULL,
    bundles        INTEGER NOT NULL,
    first_entry    INTEGER NOT NULL,
    entries        INTEGER NOT NULL
);

-- Every blob of at least index.bigBlobBytes of content (a bundle carrying
-- its CRDs, say), whose bytes the gzip copy compresses apart from the
-- blobs around it, so that the next build of the catalog reuses what it
-- knows of the blob where a changed file still holds it, byte for byte
-- once made canonical, instead of decoding, checking and compressing it
-- again. digest is its hash in its package's digest (index.blobHash,
-- computed also for a blob of no package), which the next build looks it
-- up by; problems what checking it alone found (a bundle's, as JSON; NULL
-- for other schemas); bundle_id its bundle (NULL for other schemas);
-- gzip_start where its piece of the gzip copy starts, counted from its
-- file's (files.gzip_offset), gzip_length the piece's length and gzip_crc
-- the CRC-32 of the blob's bytes.
CREATE TABLE big_blobs (
    blob_id     INTEGER PRIMARY KEY,
    digest      BLOB    NOT NULL,
    problems    TEXT,
    bundle_id   INTEGER,
    gzip_start  INTEGER NOT NULL,
    gzip_length INTEGER NOT NULL,
    gzip_crc    INTEGER NOT NULL
);
