-- What a catalog's summary reports, counted once here rather than on every
-- request: what is "packages", "channels" or "bundles", or "schema" with
-- the schema's name. Made from the finished tables by every build, full or
-- incremental (which drops the previous index's table first).
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
