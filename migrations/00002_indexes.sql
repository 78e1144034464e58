-- Secondary indexes, one per query path of internal/catalogdb (each is checked
-- with EXPLAIN QUERY PLAN in internal/httpapi's tests). Creating them after
-- the bulk load is much faster than maintaining them row by row. An
-- incremental build starts from a copy of the previous index, these
-- included, and keeps them up to date as it changes its rows.

CREATE INDEX blobs_schema_package_name ON blobs (schema, package, name);
CREATE INDEX blobs_package_name ON blobs (package, name);
CREATE INDEX blobs_name ON blobs (name);
-- A schema's blobs in id order (the index's keys end with the rowid): the
-- GraphQL endpoint pages through them, as catalogd does, by offset.
CREATE INDEX blobs_schema ON blobs (schema);
CREATE INDEX channel_entries_channel ON channel_entries (package, channel, position);
CREATE INDEX channel_entries_bundle ON channel_entries (package, bundle, channel);
-- OLM v0's registry API lists every entry by channel, package and bundle
-- (ListBundles), a page at a time.
CREATE INDEX channel_entries_listing ON channel_entries (channel, package, bundle);
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
