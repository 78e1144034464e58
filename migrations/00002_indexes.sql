-- Secondary indexes, one per query path of internal/query (each is checked
-- with EXPLAIN QUERY PLAN in internal/query's tests). Creating them after the
-- bulk load is much faster than maintaining them row by row.

CREATE INDEX blobs_schema_package_name ON blobs (schema, package, name);
CREATE INDEX blobs_package_name ON blobs (package, name);
CREATE INDEX blobs_name ON blobs (name);
CREATE INDEX blobs_offset ON blobs (offset);
CREATE INDEX channel_entries_channel ON channel_entries (package, channel, position);
CREATE INDEX channel_entries_bundle ON channel_entries (package, bundle, channel);
CREATE INDEX channel_entries_replaces ON channel_entries (package, replaces);
CREATE INDEX channel_entry_skips_skip ON channel_entry_skips (package, skip);
CREATE INDEX channel_entry_skips_entry ON channel_entry_skips (entry_id);
CREATE INDEX bundles_package_rank ON bundles (package, version_rank);
CREATE INDEX bundles_package_version ON bundles (package, version);
CREATE INDEX provided_gvks_gvk ON provided_gvks (kind, grp, version);
CREATE INDEX deprecations_ref ON deprecations (package, schema, name);
CREATE INDEX problems_package ON problems (package);
