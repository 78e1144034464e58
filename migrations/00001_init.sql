-- The catalog index: one database file per catalog and content digest.
-- Names (package, channel, bundle) are the keys, as in FBC itself, so blobs can
-- be inserted in whatever order the catalog lists them without resolving ids.
-- Secondary indexes are created by 00002 after the bulk load is done.

-- +goose Up
CREATE TABLE catalog_info (
    id             INTEGER PRIMARY KEY CHECK (id = 1),
    source_ref     TEXT    NOT NULL,
    content_digest TEXT    NOT NULL,
    built_at       TEXT    NOT NULL,
    all_size       INTEGER NOT NULL DEFAULT 0,
    -- Digest of the migrations that built this file: a file built by another
    -- schema is rebuilt rather than read, even for the same content.
    schema_digest  TEXT    NOT NULL
);

-- Every blob in walk order, exactly as catalogd serves it (declcfg.Meta
-- encoding, newline-terminated). offset is the blob's byte offset in /all.
CREATE TABLE blobs (
    id      INTEGER PRIMARY KEY,
    schema  TEXT    NOT NULL,
    package TEXT    NOT NULL DEFAULT '',
    name    TEXT    NOT NULL DEFAULT '',
    offset  INTEGER NOT NULL,
    data    TEXT    NOT NULL
);

CREATE TABLE packages (
    name            TEXT PRIMARY KEY,
    default_channel TEXT NOT NULL DEFAULT '',
    description     TEXT NOT NULL DEFAULT '',
    icon_data       BLOB,
    icon_media_type TEXT NOT NULL DEFAULT '',
    -- olm.csv.metadata value of the default channel's head, filled after the load.
    csv_metadata    TEXT
) WITHOUT ROWID;

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
    -- Sortable version: the numeric parts, and version_rank, the bundle's place
    -- in semver order within its package (0 = lowest), set after the load.
    ver_major    INTEGER,
    ver_minor    INTEGER,
    ver_patch    INTEGER,
    ver_pre      TEXT    NOT NULL DEFAULT '',
    version_rank INTEGER NOT NULL DEFAULT 0,
    UNIQUE (package, name)
);

CREATE TABLE related_images (
    bundle_id INTEGER NOT NULL,
    name      TEXT    NOT NULL DEFAULT '',
    image     TEXT    NOT NULL
);

-- Every property of every bundle; value is the property's JSON exactly as
-- it stands in the blob (object, string, number or array).
CREATE TABLE properties (
    bundle_id INTEGER NOT NULL,
    position  INTEGER NOT NULL,
    type      TEXT    NOT NULL,
    value     TEXT    NOT NULL
);
-- Created with the table, not after the load: bundle ids only grow, so the
-- index is appended to, which costs little, and the build itself reads the
-- default channel heads' olm.csv.metadata through it.
CREATE INDEX properties_bundle ON properties (bundle_id, position);

CREATE TABLE provided_gvks (
    bundle_id INTEGER NOT NULL,
    grp       TEXT    NOT NULL,
    version   TEXT    NOT NULL,
    kind      TEXT    NOT NULL
);

CREATE TABLE required_gvks (
    bundle_id INTEGER NOT NULL,
    grp       TEXT    NOT NULL,
    version   TEXT    NOT NULL,
    kind      TEXT    NOT NULL
);

CREATE TABLE required_packages (
    bundle_id     INTEGER NOT NULL,
    package_name  TEXT    NOT NULL,
    version_range TEXT    NOT NULL
);

-- schema is olm.package, olm.channel or olm.bundle; name is empty for olm.package.
CREATE TABLE deprecations (
    package TEXT NOT NULL,
    schema  TEXT NOT NULL,
    name    TEXT NOT NULL DEFAULT '',
    message TEXT NOT NULL
);

-- Validation problems found while building: the package still answers.
CREATE TABLE problems (
    id      INTEGER PRIMARY KEY,
    package TEXT NOT NULL,
    message TEXT NOT NULL
);

-- Full-text search over what a console shows of a package.
CREATE VIRTUAL TABLE package_search USING fts5(
    name, display_name, keywords, provider, description,
    tokenize = 'porter unicode61'
);

-- +goose Down
DROP TABLE package_search;
DROP TABLE problems;
DROP TABLE deprecations;
DROP TABLE required_packages;
DROP TABLE required_gvks;
DROP TABLE provided_gvks;
DROP INDEX properties_bundle;
DROP TABLE properties;
DROP TABLE related_images;
DROP TABLE bundles;
DROP TABLE channel_entry_skips;
DROP TABLE channel_entries;
DROP TABLE channels;
DROP TABLE packages;
DROP TABLE blobs;
DROP TABLE catalog_info;
