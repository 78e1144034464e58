-- Secondary indexes, one per query path of internal/catalogdb (each is checked
-- with EXPLAIN QUERY PLAN in internal/httpapi's tests), and the catalog's
-- counts. Creating them after the bulk load is much faster than maintaining
-- them row by row.

CREATE INDEX blobs_schema_package_name ON blobs (schema, package, name);
CREATE INDEX blobs_package_name ON blobs (package, name);
CREATE INDEX blobs_name ON blobs (name);
-- A schema's blobs in id order (the index's keys end with the rowid): the
-- GraphQL endpoint pages through them, as catalogd does, by offset.
CREATE INDEX blobs_schema ON blobs (schema);
CREATE INDEX channel_entries_channel ON channel_entries (package, channel, position);
CREATE INDEX channel_entries_bundle ON channel_entries (package, bundle, channel);
CREATE INDEX channel_entries_replaces ON channel_entries (package, replaces);
CREATE INDEX channel_entry_skips_skip ON channel_entry_skips (package, skip);
CREATE INDEX channel_entry_skips_entry ON channel_entry_skips (entry_id);
CREATE INDEX bundles_package_rank ON bundles (package, version_rank);
CREATE INDEX bundles_package_version ON bundles (package, version);
CREATE INDEX provided_gvks_gvk ON provided_gvks (kind, grp, version);
CREATE INDEX deprecations_ref ON deprecations (package, schema, name);
-- An incremental build copies a file's deprecations by blob id range.
CREATE INDEX deprecations_blob ON deprecations (blob_id);
CREATE INDEX problems_package ON problems (package);
CREATE INDEX channel_entries_skip_range ON channel_entries (package) WHERE skip_range != '';
-- OLM v0's registry API asks which entries, of any package, replace or
-- skip a bundle named alone (GetChannelEntriesThatReplace).
CREATE INDEX channel_entries_replaced ON channel_entries (replaces);
CREATE INDEX channel_entry_skips_skipped ON channel_entry_skips (skip);

-- What a catalog's summary reports, counted once here rather than on every
-- request: what is "packages", "channels" or "bundles", or "schema" with
-- the schema's name.
CREATE TABLE catalog_counts (
    what  TEXT    NOT NULL,
    name  TEXT    NOT NULL DEFAULT '',
    count INTEGER NOT NULL,
    PRIMARY KEY (what, name)
) WITHOUT ROWID;
INSERT INTO catalog_counts (what, count) SELECT 'packages', count(*) FROM packages;
INSERT INTO catalog_counts (what, count) SELECT 'channels', count(*) FROM channels;
INSERT INTO catalog_counts (what, count) SELECT 'bundles', count(*) FROM bundles;
INSERT INTO catalog_counts (what, name, count) SELECT 'schema', schema, count(*) FROM blobs GROUP BY schema;
